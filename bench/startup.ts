/**
 * Start-up: the kernel with every built-in plugin, measured in fresh processes. "Boot" is the
 * time from all imports done to `ready`; the total is compared to a bare `node -e 0`.
 */
import { spawnSync } from 'node:child_process';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function benchStartup(repeats = 7) {
  const bare: number[] = [];
  const total: number[] = [];
  const boot: number[] = [];
  const imports: number[] = [];
  const child = new URL('./boot-child.js', import.meta.url).pathname;
  for (let i = 0; i < repeats; i++) {
    let t = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    bare.push(performance.now() - t);
    t = performance.now();
    const r = spawnSync(process.execPath, [child], { encoding: 'utf8' });
    total.push(performance.now() - t);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    boot.push(out.bootMs);
    imports.push(out.importMs);
  }
  return { bareNodeMs: median(bare), totalMs: median(total), importMs: median(imports), bootMs: median(boot) };
}

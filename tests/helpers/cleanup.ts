/**
 * What a test file boots and creates, released after each test: kernels shut down, mock servers
 * and other closables closed, temp folders removed. `tmp(prefix)` makes a real-path temp folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

export interface Tracked {
  kernels: Array<{ shutdown(): Promise<void> }>;
  closers: Array<{ close(): Promise<unknown> | unknown }>;
  tmp(prefix: string): string;
}

export function trackResources(): Tracked {
  const kernels: Tracked['kernels'] = [];
  const closers: Tracked['closers'] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const k of kernels.splice(0)) await k.shutdown();
    for (const c of closers.splice(0)) await c.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  return {
    kernels,
    closers,
    tmp(prefix) {
      const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
      dirs.push(d);
      return d;
    },
  };
}

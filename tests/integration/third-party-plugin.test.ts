/**
 * A third-party plugin loaded from $LIVEAGENT_HOME/plugins adds a tool and a provider without
 * touching core, and a turn runs through both.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKernel, type Kernel } from '../../core/kernel.js';

const fixture = path.resolve(import.meta.dirname, '../fixtures/third-party-plugin');
const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});

function homeWithPlugin(files?: Record<string, string>) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-3p-'));
  const dir = path.join(home, 'plugins', 'acme-weather');
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(fixture)) fs.copyFileSync(path.join(fixture, f), path.join(dir, f));
  for (const [name, text] of Object.entries(files ?? {})) fs.writeFileSync(path.join(dir, name), text);
  return home;
}

describe('third-party plugins', () => {
  it('load from $LIVEAGENT_HOME/plugins and drive a turn through their tool and provider', async () => {
    const kernel = await createKernel({ home: homeWithPlugin() });
    kernels.push(kernel);
    expect(kernel.loaded.find((p) => p.name === 'acme-weather')?.status).toBe('active');
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'weather?' }], provider: 'acme', mode: 'tools' });
    const types: string[] = [];
    for await (const e of run.events) types.push(e.type);
    const result = await run.result;
    expect(result.status).toBe('completed');
    expect(types).toContain('tool_execution_end');
    const last = result.messages.at(-1)!;
    expect(last.content[0]).toEqual({ type: 'text', text: 'The tool said: Sunny in Paris, 21°C' });
  });

  it('loads a plugin by its npm package name from settings', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-3p-npm-'));
    const pkg = path.join(home, 'node_modules', '@acme', 'liveagent-weather');
    fs.mkdirSync(pkg, { recursive: true });
    for (const f of fs.readdirSync(fixture)) fs.copyFileSync(path.join(fixture, f), path.join(pkg, f));
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: '@acme/liveagent-weather', type: 'module', exports: { '.': { import: './index.js' } } }));
    fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ plugins: ['@acme/liveagent-weather'] }));
    const kernel = await createKernel({ home });
    kernels.push(kernel);
    expect(kernel.loaded.find((p) => p.name === 'acme-weather')?.status).toBe('active');
    const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'weather?' }], provider: 'acme' }).result;
    expect(result.status).toBe('completed');
  });

  it('a plugin that fails to load is named and the host keeps running', async () => {
    const home = homeWithPlugin({ 'index.js': 'export default { name: "acme-weather", apply() { throw new Error("no network"); } };' });
    const broken = path.join(home, 'plugins', 'broken-syntax');
    fs.mkdirSync(broken);
    fs.writeFileSync(path.join(broken, 'package.json'), '{"name":"broken-syntax","type":"module","main":"index.js"}');
    fs.writeFileSync(path.join(broken, 'index.js'), 'export default {{{');
    const lines: string[] = [];
    const kernel = await createKernel({ home, logSink: (_l, _s, m) => lines.push(m) });
    kernels.push(kernel);
    const names = kernel.failures.map((f) => f.message).join('\n');
    expect(names).toContain('acme-weather');
    expect(names).toContain('no network');
    expect(names).toContain('broken-syntax');
    expect(lines.join('\n')).toContain('acme-weather');
  });
});

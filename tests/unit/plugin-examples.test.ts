/**
 * The author's walk (docs/plugin-authoring.md) is real: the example plugins under docs/examples/
 * and the type tests under tests/types/ compile against plugin-api.d.ts alone (each folder's
 * tsconfig maps `liveagent/plugin-api` to the file, nothing else of the repo), and the examples
 * load into a kernel and work together: the provider calls both tools, the second plugin
 * consumes the first one's service, and the first one's events reach `ctx.runtime.onEvent`.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import scripted from '../../docs/examples/scripted-provider.js';
import umbrella, { alertsSeen } from '../../docs/examples/umbrella-plugin.js';
import weather from '../../docs/examples/weather-plugin.js';
import { trackResources } from '../helpers/cleanup.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

async function compile(project: string): Promise<string> {
  try {
    await promisify(execFile)(process.execPath, [TSC, '-p', path.join(ROOT, project), '--pretty', 'false'], { cwd: ROOT });
    return '';
  } catch (err) {
    return String((err as { stdout?: string }).stdout || err);
  }
}

describe('plugin examples and type tests', () => {
  const res = trackResources();

  it('docs/examples compile against plugin-api.d.ts alone', async () => {
    expect(await compile('docs/examples/tsconfig.json')).toBe('');
  }, 60_000);

  it('tests/types compile: typed config, inferred tool args, merged services and events, every @ts-expect-error holding', async () => {
    expect(await compile('tests/types/tsconfig.json')).toBe('');
  }, 60_000);

  it('the examples run in a kernel: tool called by the provider, service consumed by the second plugin, events seen', async () => {
    const kernel = await createKernel({
      home: res.tmp('h21-examples-'),
      plugins: [scripted, weather, umbrella],
      settings: { defaultProvider: 'scripted', pluginSettings: { 'acme-weather': { units: 'F' } } },
      thirdParty: false,
    });
    res.kernels.push(kernel);
    expect(kernel.failures).toEqual([]);
    const events: LifecycleEvent[] = [];
    const watch = kernel.runtime.onEvent((e) => events.push(e));
    const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'Umbrella for Oslo?' }] }).result;
    watch.dispose();
    expect(result.status).toBe('completed');
    const ends = events.flatMap((e) => (e.type === 'tool_execution_end' ? [e.result] : []));
    expect(ends.map((r) => [r.toolName, r.isError, r.content[0]])).toEqual([
      ['weather', false, { type: 'text', text: 'Oslo: 57°F, rain' }],
      ['umbrella', false, { type: 'text', text: 'Take an umbrella to Oslo.' }],
    ]);
    const reply = result.messages.at(-1)!.content[0];
    expect(reply).toEqual({ type: 'text', text: 'Oslo: 57°F, rain Take an umbrella to Oslo.' });
    // Its own event travels as `custom`; `notice` under its own type, which the WebUI shows.
    expect(alertsSeen).toContain('Rain expected in Oslo');
    expect(events.find((e) => e.type === 'notice')).toMatchObject({ payload: { kind: 'weather', message: 'Rain expected in Oslo' } });
  });
});

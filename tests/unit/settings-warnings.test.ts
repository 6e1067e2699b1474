/**
 * Unknown settings keys are warnings with a did-you-mean, never errors: in settings.json at
 * load, in a save, and inside plugin sections (each plugin's zod schema says what it knows).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Logger, Plugin } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { FileSettingsStore, SettingsSchema } from '../../core/settings.js';
import { editDistance, knownKeysAt, nearestKey, unknownKeys } from '../../core/settings-warnings.js';
import { builtinToolPlugins } from '../../hosts/builtins.js';

const homes: string[] = [];
const kernels: Kernel[] = [];
const stores: FileSettingsStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const s of stores.splice(0)) s.close();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function home(settings?: unknown): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-settings-warn-'));
  homes.push(dir);
  if (settings !== undefined) fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
  return dir;
}

function recorder(): Logger & { warned: string[] } {
  const warned: string[] = [];
  return { warned, debug() {}, info() {}, warn: (m: string) => void warned.push(m), error() {} };
}

const tick = () => new Promise((r) => setImmediate(r));

/** A third-party style plugin whose section (pluginSettings.acme) is a plain zod object. */
const acme: Plugin = {
  name: 'acme',
  settingsSchema: z.object({ timeout: z.number().optional(), retries: z.number().optional(), nested: z.object({ depth: z.number() }).optional() }),
  apply() {},
};

describe('settings warnings', () => {
  it('names an unknown key in settings.json with the nearest known one, keeps the value, and logs it once', async () => {
    const dir = home({ defaultModle: 'claude-x', runtime: { maxRoundz: 3, maxRounds: 4 }, somethingElse: true, systemPrompt: 'hi' });
    const logger = recorder();
    const store = new FileSettingsStore(path.join(dir, 'settings.json'), undefined, { logger, watch: false });
    stores.push(store);
    expect(store.warnings()).toEqual([
      { path: 'defaultModle', suggestion: 'defaultModel', message: 'unknown key defaultModle (did you mean defaultModel?); it has no effect' },
      { path: 'somethingElse', message: 'unknown key somethingElse; it has no effect' },
      { path: 'runtime.maxRoundz', suggestion: 'runtime.maxRounds', message: 'unknown key runtime.maxRoundz (did you mean runtime.maxRounds?); it has no effect' },
    ]);
    // Warned, not refused: the values load (a newer version's file must still work).
    expect(store.get()).toMatchObject({ defaultModle: 'claude-x', runtime: { maxRoundz: 3, maxRounds: 4 } });
    await tick();
    expect(logger.warned).toEqual(store.warnings().map((w) => w.message));
    // A save with the same keys does not log them again; a new unknown key is logged.
    await store.update({ systemPrompt: 'changed' });
    await store.update({ runtime: { maxRounds: 4, maxRoundz: 3, retryMaxAttemps: 2 } as never });
    await tick();
    expect(logger.warned.slice(3)).toEqual(['unknown key runtime.retryMaxAttemps (did you mean runtime.retryMaxAttempts?); it has no effect']);
  });

  it('checks plugin sections with their schemas: shared sections (tools) and pluginSettings; sections of builtins not loaded are still known', async () => {
    const dir = home({
      tools: { bsh: { defaultTimeoutMs: 5 }, read: { maxLines: 10 }, bash: { defaultTimeoutMs: 1000 } },
      pluginSettings: { acme: { timout: 5, retries: 1, nested: { depht: 1, depth: 2 } } },
      gateway: { replayWindow: 10 }, // the gateway plugin is not loaded here (as in the CLI): no warning
      mcp: { callTimeoutMs: 10 },
      compation: { enabled: true },
    });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const kernel = await createKernel({ home: dir, plugins: [...builtinToolPlugins, acme], thirdParty: false });
    kernels.push(kernel);
    expect(kernel.failures).toEqual([]);
    const warnings = kernel.settings.warnings();
    expect(warnings.map((w) => [w.path, w.suggestion])).toEqual([
      ['compation', 'compaction'],
      ['tools.bsh', 'tools.bash'],
      ['pluginSettings.acme.timout', 'pluginSettings.acme.timeout'],
      ['pluginSettings.acme.nested.depht', 'pluginSettings.acme.nested.depth'],
    ]);
    // Logged at load, once every plugin has declared its section.
    await tick();
    const logged = stderr.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('unknown key'));
    expect(logged).toEqual(warnings.map((w) => `[warn] settings: ${w.message}\n`));
  });

  it('a save adding an unknown key succeeds and reports it; a misspelt key of a strict section is refused with the nearest key', async () => {
    const strict: Plugin = { name: 'strict', settingsKey: 'strictOne', settingsSchema: z.strictObject({ interval: z.number().optional() }), apply() {} };
    const kernel = await createKernel({ home: home(), plugins: [strict, acme], settings: {}, thirdParty: false });
    kernels.push(kernel);
    await kernel.settings.update({ pluginSettings: { acme: { retires: 2 } } });
    expect(kernel.settings.get().pluginSettings).toEqual({ acme: { retires: 2 } });
    expect(kernel.settings.warnings()).toEqual([expect.objectContaining({ path: 'pluginSettings.acme.retires', suggestion: 'pluginSettings.acme.retries' })]);
    await expect(kernel.settings.update({ strictOne: { intervl: 5 } })).rejects.toThrow('settings: strictOne: Unrecognized key: "intervl" (did you mean "interval"?)');
  });

  it('every key the contract declares for Settings and RuntimeSettings is in the kernel schema (else it would be warned about as unknown)', () => {
    const file = path.resolve(import.meta.dirname, '../../plugin-api/settings.d.ts'); // the contract's Settings section
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const members = (name: string) => {
      let out: string[] = [];
      source.forEachChild((n) => {
        if (ts.isInterfaceDeclaration(n) && n.name.text === name) out = n.members.flatMap((m) => (ts.isPropertySignature(m) ? [m.name.getText()] : []));
      });
      return out.sort();
    };
    expect(knownKeysAt(SettingsSchema, []).sort()).toEqual(members('Settings'));
    expect(knownKeysAt(SettingsSchema, ['runtime']).sort()).toEqual(members('RuntimeSettings'));
  });

  it('edit distance and nearest key', () => {
    expect(editDistance('defaultModle', 'defaultModel')).toBe(1); // a transposition is one edit
    expect(editDistance('maxRoundz', 'maxRounds')).toBe(1);
    expect(editDistance('ABC', 'abc')).toBe(0);
    expect(nearestKey('maxRoundz', ['maxRounds', 'persistIntervalMs'])).toBe('maxRounds');
    expect(nearestKey('xyz', ['mcp', 'tools'])).toBeUndefined();
    expect(nearestKey('colour', ['color', 'colours'])).toBe('color');
    // Records hold data (server names), so their keys are never unknown; strict catchalls neither.
    expect(unknownKeys(z.record(z.string(), z.object({ a: z.number() })), { srv: { a: 1, b: 2 } })).toEqual([{ path: ['srv', 'b'], candidates: ['a'] }]);
    expect(unknownKeys(z.object({ a: z.number() }).catchall(z.string()), { a: 1, b: 'x' })).toEqual([]);
    // A union: only the options the value fits say what is unknown.
    expect(unknownKeys(z.union([z.object({ kind: z.literal('a'), x: z.number() }), z.object({ kind: z.literal('b'), y: z.number() })]), { kind: 'b', y: 1, z: 2 })).toEqual([
      { path: ['z'], candidates: ['kind', 'y'] },
    ]);
  });
});

/**
 * settings.json shared by a running `serve` (the real server host, reading the file itself),
 * editors and other processes: hand edits survive `settings.set` and reach every client, an
 * invalid file is never overwritten, unknown keys come back as warnings, and several processes
 * saving different keys at once all keep theirs.
 *
 * The writer child (tests/fixtures/settings-writer-child.ts) is bundled with rolldown, as in
 * history-crash.test.ts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { startServer, type RunningServer } from '../../hosts/server/start-server.js';
import type { ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { TestClient, cleanup, type Booted } from './gateway-harness.js';

type SettingsMsg = Extract<ServerMessage, { type: 'settings' }>;
interface SettingsReply {
  settings: Record<string, unknown>;
  warnings: Array<{ path: string; message: string; suggestion?: string }>;
}

import { bundledChild } from '../helpers/child-bundle.js';

const fixtureChild = bundledChild('tests/fixtures/settings-writer-child.ts', 'settings-disk');

const servers: RunningServer[] = [];
const homes: string[] = [];
afterEach(async () => {
  await cleanup();
  for (const s of servers.splice(0)) await s.close();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

function home(settings: unknown): { dir: string; file: string; disk: () => Record<string, unknown> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'la-settings-it-'));
  homes.push(dir);
  const file = path.join(dir, 'settings.json');
  fs.writeFileSync(file, JSON.stringify(settings, null, 2));
  return { dir, file, disk: () => JSON.parse(fs.readFileSync(file, 'utf8')) };
}

/** `serve` as the CLI starts it: no settings handed in, so the server reads (and follows) settings.json. */
async function serve(dir: string): Promise<Booted> {
  const provider = fakeProvider([]);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const server = await startServer({ port: 0, home: dir, builtins: [], extraPlugins: [plugin], thirdParty: false, log: () => {}, webuiDir: path.join(dir, 'no-webui') });
  servers.push(server);
  return { server, provider: provider as never, home: dir, wsUrl: `${server.url.replace(/^http/, 'ws')}/ws`, gateway: undefined as never, lines: [] };
}

function editByHand(file: string, text: string) {
  fs.writeFileSync(`${file}.edit`, text);
  fs.renameSync(`${file}.edit`, file);
}

describe('settings.json under a running serve', () => {
  it('a key added by hand survives settings.set, and the edit itself reaches every client', async () => {
    const { file, disk } = home({ defaultProvider: 'fake', systemPrompt: 'old' });
    const b = await serve(path.dirname(file));
    const a = await TestClient.connect(b);
    const other = await TestClient.connect(b);

    editByHand(file, JSON.stringify({ defaultProvider: 'fake', systemPrompt: 'old', defaultMode: 'text', runtime: { maxRounds: 9 } }, null, 2));
    // Picked up without a restart: listeners fire, clients are told.
    const pushed = await other.waitFor<SettingsMsg>((m) => m.type === 'settings' && m.settings.defaultMode === 'text');
    expect(pushed.settings).toEqual({ defaultProvider: 'fake', systemPrompt: 'old', defaultMode: 'text', runtime: { maxRounds: 9 } });
    expect(b.server.kernel.settings.get().runtime).toEqual({ maxRounds: 9 });

    // A second edit the host has not seen yet (no wait) must not be lost by the next save either.
    const raw = disk();
    editByHand(file, JSON.stringify({ ...raw, askUserQuestion: { timeoutMs: 5000 } }, null, 2));
    await a.ok({ type: 'settings.set', settings: { systemPrompt: 'new' } });
    expect(disk()).toEqual({ defaultProvider: 'fake', systemPrompt: 'new', defaultMode: 'text', runtime: { maxRounds: 9 }, askUserQuestion: { timeoutMs: 5000 } });
    expect(b.server.kernel.settings.get()).toEqual(disk());
  });

  it('an invalid file on disk is never overwritten: settings.set fails naming the file and the problem, the host keeps its last good copy', async () => {
    const { file } = home({ defaultProvider: 'fake', systemPrompt: 'good' });
    const b = await serve(path.dirname(file));
    const a = await TestClient.connect(b);
    const broken = '{\n  "defaultProvider": "fake",\n  "systemPrompt": "half an edit\n';
    editByHand(file, broken);

    const r = await a.request({ type: 'settings.set', settings: { defaultMode: 'text' } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.code).toBe('config');
    expect(!r.ok && r.error.message).toMatch(/^cannot save settings: .*settings\.json is not valid JSON: .*The file was left as it is/);
    expect(fs.readFileSync(file, 'utf8')).toBe(broken);

    const got = await a.ok<SettingsReply>({ type: 'settings.get' });
    expect(got.settings).toEqual({ defaultProvider: 'fake', systemPrompt: 'good' });
    expect(got.warnings).toEqual([{ path: '', message: expect.stringMatching(/settings\.json is not valid JSON: .*; the last good settings stay in force$/) }]);

    // Fixed by hand: saves work again and the warning is gone.
    editByHand(file, JSON.stringify({ defaultProvider: 'fake', systemPrompt: 'fixed' }));
    await a.ok({ type: 'settings.set', settings: { defaultMode: 'text' } });
    const after = await a.ok<SettingsReply>({ type: 'settings.get' });
    expect(after).toEqual({ settings: { defaultProvider: 'fake', systemPrompt: 'fixed', defaultMode: 'text' }, warnings: [] });
  });

  it('unknown keys are accepted and come back as warnings with the nearest known key; a misspelt gateway key is refused with it', async () => {
    const { file, disk } = home({ defaultProvider: 'fake' });
    const b = await serve(path.dirname(file));
    const a = await TestClient.connect(b);
    const other = await TestClient.connect(b);

    const set = await a.ok<SettingsReply>({ type: 'settings.set', settings: { defaultModle: 'fake-2', runtime: { maxRoundz: 3 } } });
    expect(set.warnings).toEqual([
      { path: 'defaultModle', suggestion: 'defaultModel', message: 'unknown key defaultModle (did you mean defaultModel?); it has no effect' },
      { path: 'runtime.maxRoundz', suggestion: 'runtime.maxRounds', message: 'unknown key runtime.maxRoundz (did you mean runtime.maxRounds?); it has no effect' },
    ]);
    expect(disk()).toEqual({ defaultProvider: 'fake', defaultModle: 'fake-2', runtime: { maxRoundz: 3 } });
    const pushed = await other.waitFor<SettingsMsg>((m) => m.type === 'settings' && m.settings.defaultModle === 'fake-2');
    expect(pushed.warnings).toEqual(set.warnings);

    const bad = await a.request({ type: 'settings.set', settings: { gateway: { replayWindw: 5 } } });
    expect(!bad.ok && bad.error.message).toBe('settings: gateway: Unrecognized key: "replayWindw" (did you mean "replayWindow"?)');
  });
});

describe('several processes saving settings.json at once', () => {
  it('4 processes saving 15 keys each, alongside a running serve: every key survives', async () => {
    const { file, disk } = home({ defaultProvider: 'fake' });
    const b = await serve(path.dirname(file));
    const a = await TestClient.connect(b);
    const N = 4;
    const COUNT = 15;
    const run = (w: number) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [fixtureChild.entry(), file, String(w), String(COUNT)], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => resolve({ code, stderr }));
      });
    const serveSaves = (async () => {
      for (let i = 0; i < COUNT; i++) await a.ok({ type: 'settings.set', settings: { systemPrompt: `serve ${i}` } });
    })();
    const results = await Promise.all([...Array.from({ length: N }, (_, w) => run(w)), serveSaves.then(() => ({ code: 0, stderr: '' }))]);
    expect(results).toEqual(results.map(() => ({ code: 0, stderr: '' })));
    const stored = disk();
    expect(stored.systemPrompt).toBe(`serve ${COUNT - 1}`);
    expect(Object.keys(stored.pluginSettings as object).sort()).toEqual(
      Array.from({ length: N }, (_, w) => Array.from({ length: COUNT }, (_, i) => `w${w}_${i}`)).flat().sort(),
    );
    expect(fs.readdirSync(path.dirname(file)).filter((f) => f.includes('settings'))).toEqual(['settings.json']);
  }, 60_000);
});

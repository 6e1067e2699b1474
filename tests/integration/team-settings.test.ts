/**
 * plugins/team-settings against a real PostgreSQL: two kernels with their own homes on one
 * database share their settings. The first seeds the team's document from its file; a provider
 * key saved on A reaches B (onChange); concurrent saves from both keep both keys; an invalid
 * save is refused with nothing stored; an MCP server added on A is connected on B.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import createKnex from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import mcpPlugin from '../../plugins/mcp/index.js';
import type { McpService } from '../../plugins/mcp/service.js';
import teamSettings from '../../plugins/team-settings/index.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const pg = usePostgres();
const DYNAMIC = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'tests/fixtures/mcp/dynamic-server.mjs');

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

async function boot(url: string, file: Settings = {}): Promise<Kernel> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'team-settings-'));
  homes.push(home);
  const settings = { ...file, history: { url }, pluginSettings: { 'team-settings': { pollMs: 200, connectTimeoutMs: 5000 } } };
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify(settings, null, 2));
  const kernel = await createKernel({ home, plugins: [teamSettings, mcpPlugin], thirdParty: false, logSink: () => {} });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return kernel;
}

async function storedRow(url: string): Promise<{ doc: Record<string, unknown>; version: number }> {
  const knex = createKnex({ client: 'pg', connection: url });
  try {
    const row = (await knex('team_settings').where({ id: 1 }).first()) as { doc: string; version: string | number };
    return { doc: JSON.parse(row.doc) as Record<string, unknown>, version: Number(row.version) };
  } finally {
    await knex.destroy();
  }
}

const fileOf = (k: Kernel) => JSON.parse(fs.readFileSync(k.paths.settingsFile, 'utf8')) as Settings;

describe.skipIf(postgresSkip)('team settings on PostgreSQL', () => {
  it('the first process seeds the team; a provider key saved on A reaches B through onChange', async () => {
    const url = await pg.cluster().createDatabase();
    const a = await boot(url, { defaultModel: 'from-a', providers: { openai: { apiKey: 'sk-a0' } } });
    expect((await storedRow(url)).doc).toEqual({ defaultModel: 'from-a', providers: { openai: { apiKey: 'sk-a0' } } });
    const b = await boot(url, { defaultModel: 'from-b' });
    expect(b.settings.get()).toMatchObject({ defaultModel: 'from-a', providers: { openai: { apiKey: 'sk-a0' } }, history: { url } });

    const seen = new Promise<Settings>((resolve) => {
      const sub = b.settings.onChange((s) => {
        if ((s.providers as Record<string, { apiKey?: string }> | undefined)?.anthropic?.apiKey !== 'sk-ant') return;
        sub.dispose();
        resolve(s);
      });
    });
    await a.settings.update({ providers: { ...a.settings.get().providers, anthropic: { apiKey: 'sk-ant' } } });
    const onB = await seen;
    expect(onB.providers).toEqual({ openai: { apiKey: 'sk-a0' }, anthropic: { apiKey: 'sk-ant' } });
    // B's own file is not where the team's keys go.
    expect(fileOf(b).providers).toBeUndefined();
    expect(fileOf(b).defaultModel).toBe('from-b');
  });

  it('concurrent saves from both processes keep both keys', async () => {
    const url = await pg.cluster().createDatabase();
    const a = await boot(url);
    const b = await boot(url);
    await Promise.all([
      a.settings.update({ providers: { ...a.settings.get().providers, anthropic: { apiKey: 'key-a' } } }),
      b.settings.update({ providers: { ...b.settings.get().providers, gemini: { apiKey: 'key-b' } } }),
      a.settings.update({ systemPrompt: 'from a' }),
      b.settings.update({ defaultModel: 'from b' }),
    ]);
    const want = { providers: { anthropic: { apiKey: 'key-a' }, gemini: { apiKey: 'key-b' } }, systemPrompt: 'from a', defaultModel: 'from b' };
    expect((await storedRow(url)).doc).toEqual(want);
    for (const k of [a, b]) await expect.poll(() => k.settings.get(), { timeout: 10_000 }).toMatchObject(want);
  });

  it('an invalid save is refused by name and nothing stored changes', async () => {
    const url = await pg.cluster().createDatabase();
    const a = await boot(url, { providers: { openai: { apiKey: 'sk-a0' } } });
    await boot(url);
    const before = await storedRow(url);
    await expect(a.settings.update({ mcpServers: { bad: { command: 'x', args: 'not-a-list' } } })).rejects.toThrow(/mcpServers\.bad\.args/);
    await expect(a.settings.update({ customProviders: [{ id: 'no spaces', format: 'openai-chat', baseUrl: 'https://x.example' }] as never })).rejects.toThrow(/customProviders\[0\]/);
    await expect(a.settings.update({ runtime: { maxRounds: 0 } })).rejects.toThrow(/runtime\.maxRounds/);
    expect(await storedRow(url)).toEqual(before);
    expect(a.settings.get().mcpServers).toBeUndefined();
  });

  it('an MCP server added on A is connected on B', async () => {
    const url = await pg.cluster().createDatabase();
    const a = await boot(url, { mcp: { connectTimeoutMs: 10_000 } });
    const b = await boot(url);
    const mcpB = b.services.get<McpService>('mcp')!;
    expect(mcpB.servers()).toEqual([]);
    await a.settings.update({ mcpServers: { dyn: { command: process.execPath, args: [DYNAMIC] } } });
    await expect.poll(() => mcpB.servers().map((s) => `${s.name}:${s.state}`), { timeout: 15_000 }).toEqual(['dyn:connected']);
    expect(mcpB.servers()[0]!.tools.length).toBeGreaterThan(0);
    // Removed on B: stopped on A too.
    const mcpA = a.services.get<McpService>('mcp')!;
    await expect.poll(() => mcpA.servers().map((s) => s.state), { timeout: 15_000 }).toEqual(['connected']);
    await b.settings.update({ mcpServers: {} });
    await expect.poll(() => mcpA.servers(), { timeout: 10_000 }).toEqual([]);
  });
});

/**
 * What a one-shot `liveagent chat` loads on a home whose database already exists: the turn, its
 * title and the memory pin use prepared statements, so knex (~120 ms of imports, needed only to
 * migrate a new database and for list/search queries) is never imported. Guards the cold start
 * (issue 10) against a plugin reaching for a knex-backed history call on the run's path.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { ROOT, runCli, tempHome } from '../helpers/cli.js';

let mock: MockAnthropicServer;
beforeAll(async () => {
  mock = await startMockAnthropic({ script: (req) => anthropicReply({ text: JSON.stringify(req.body.system ?? '').includes('title') ? 'Greeting the assistant' : 'hello back' }) });
});
afterAll(() => mock?.close());

describe('a one-shot chat on an existing home', () => {
  it('never imports knex (turn, title, memory pin), while a fresh home does (its migration)', async () => {
    const home = tempHome({ providers: { claude_code: { apiKey: 'k', baseUrl: mock.url } } });
    const env = { NODE_OPTIONS: `--import=${pathToFileURL(path.join(ROOT, 'tests/fixtures/import-trace.mjs')).href}`, LIVEAGENT_TRACE_IMPORTS: 'knex' };
    const first = await runCli(['chat', '--mode', 'tools', 'hello there, assistant'], { home, env, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('import-trace: knex');
    const second = await runCli(['chat', '--mode', 'tools', 'and hello again'], { home, env, timeoutMs: 60_000 });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('hello back');
    expect(second.stderr).not.toContain('import-trace: knex');
  }, 120_000);
});

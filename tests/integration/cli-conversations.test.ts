/**
 * `liveagent conversations` through the real CLI, against the Anthropic wire mock: `chat` stores
 * a conversation and its generated title (the process waits for it before exiting), and
 * `conversations` lists them newest first, as text or one JSON object per line, filtered by
 * --search and cut by --limit; bad usage exits 2 with a one-line reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import type { RecordedRequest } from '../fixtures/mock-http.js';
import { jsonLines, runCli, tempHome } from '../helpers/cli.js';

const KEY = 'sk-ant-conversations';
const isTitleRequest = (r: RecordedRequest) => JSON.stringify(r.body.system ?? '').includes('You name chat conversations');

let mock: MockAnthropicServer;
let home: string;
const env = () => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url });
const ids: string[] = [];

beforeAll(async () => {
  mock = await startMockAnthropic({
    apiKey: KEY,
    script: (req) => {
      if (!isTitleRequest(req)) return anthropicReply({ text: 'Paris is the capital.' });
      const prompt = JSON.stringify(req.body.messages);
      return anthropicReply({ text: prompt.includes('France') ? '"Capital of France"' : 'Boiling point of water.' });
    },
  });
  home = tempHome();
  for (const q of ['What is the capital of France?', 'At what temperature does water boil?']) {
    const r = await runCli(['chat', '--mode', 'text', '--json', q], { home, env: env() });
    expect(r.code, r.stderr).toBe(0);
    ids.push(jsonLines(r.stdout)[0]!.conversationId as string);
  }
}, 60_000);
afterAll(() => mock.close());

describe('liveagent conversations', () => {
  it('--json prints one object per line, newest first, with the titles chat stored before it exited', async () => {
    const r = await runCli(['conversations', '--json'], { home });
    expect(r.code, r.stderr).toBe(0);
    const rows = jsonLines(r.stdout);
    expect(rows.map((c) => c.id)).toEqual([ids[1], ids[0]]);
    expect(rows.map((c) => c.title)).toEqual(['Boiling point of water', 'Capital of France']);
    for (const c of rows) {
      expect(c).toMatchObject({ messageCount: 2, provider: 'claude_code', model: 'claude-sonnet-4-6' });
      expect(typeof c.updatedAt).toBe('number');
    }
    expect(rows[0]!.updatedAt).toBeGreaterThanOrEqual(rows[1]!.updatedAt);
  });

  it('--search matches titles and message text; --limit keeps the newest', async () => {
    const byTitle = jsonLines((await runCli(['conversations', '--json', '--search', 'capital of'], { home })).stdout);
    expect(byTitle.map((c) => c.id)).toEqual([ids[0]]);
    const byText = jsonLines((await runCli(['conversations', '--json', '--search', 'temperature'], { home })).stdout);
    expect(byText.map((c) => c.id)).toEqual([ids[1]]);
    const one = jsonLines((await runCli(['conversations', '--json', '--limit', '1'], { home })).stdout);
    expect(one.map((c) => c.id)).toEqual([ids[1]]);
  });

  it('prints a line per conversation: id, updated time, message count and title', async () => {
    const r = await runCli(['conversations'], { home });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^${ids[1]}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+2 msg\\s+Boiling point of water$`));
    expect(lines[1]).toMatch(/Capital of France$/);
    const none = await runCli(['conversations', '--search', 'nothing like this'], { home });
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('no stored conversation matches "nothing like this"');
  });

  it('bad usage exits 2 with a one-line reason (as JSON too with --json)', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['conversations', '--limit', '0'], /--limit must be a number from 1 to 500, got "0"/],
      [['conversations', '--limit', 'many'], /--limit must be a number from 1 to 500/],
      [['conversations', '--serach', 'x'], /Unknown option '--serach'/],
      [['conversations', 'extra'], /unexpected argument "extra"/],
      [['conversations', '--search', '  '], /--search needs a non-empty TEXT/],
    ];
    for (const [args, reason] of cases) {
      const r = await runCli(args, { home });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(reason);
    }
    const json = await runCli(['conversations', '--json', '--limit', '-3'], { home });
    expect(json.code).toBe(2);
    expect(jsonLines(json.stdout)).toEqual([expect.objectContaining({ type: 'error', exitCode: 2 })]);
  });

  it('a fresh home lists nothing', async () => {
    const r = await runCli(['conversations', '--json'], { home: tempHome() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
  });

  it('--help shows the command', async () => {
    const r = await runCli(['--help'], { home });
    expect(r.stdout).toContain('liveagent conversations [--json] [--search TEXT] [--limit N]');
  });
});

/**
 * The `liveagent` CLI as a user runs it, against a wire-faithful Anthropic-format server:
 * the External contracts of the spec (flags, defaults, stdout/stderr, exit codes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicError, anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { jsonLines, runCli, tempHome } from '../helpers/cli.js';

let mock: MockAnthropicServer;
const KEY = 'sk-ant-test';
const env = () => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url });

beforeAll(async () => {
  mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: ['Hello', ' from', ' the mock'] }) });
});
afterAll(() => mock.close());

const LIFECYCLE = ['agent_start', 'turn_start', 'message_start', 'message_update', 'message_end', 'turn_end', 'agent_end'];

describe('liveagent chat', () => {
  it('--json prints one event per line, in lifecycle order, with conversationId and seq from 1', async () => {
    const home = tempHome();
    const r = await runCli(['chat', '--json', '--mode', 'text', 'Say hello'], { home, env: env() });
    expect(r.code, r.stderr).toBe(0);
    const events = jsonLines(r.stdout);
    const order = events.map((e) => e.type).filter((t, i, a) => t !== 'message_update' || a[i - 1] !== 'message_update');
    // Other event types may stand between the lifecycle ones: here the request's context budget.
    expect(order).toEqual(['agent_start', 'context', ...LIFECYCLE.slice(1)]);
    expect(events.find((e) => e.type === 'context')!.payload).toMatchObject({ round: 1, contextWindow: 1_000_000 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(new Set(events.map((e) => e.conversationId)).size).toBe(1);
    const text = events.filter((e) => e.type === 'message_update' && e.delta.kind === 'text').map((e) => e.delta.text).join('');
    expect(text).toBe('Hello from the mock');
  });

  it('streams the reply to stdout and ends stderr with the conversation id', async () => {
    const r = await runCli(['chat', 'Say hello'], { home: tempHome(), env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Hello from the mock\n');
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^conversation: c_[a-z0-9]+$/);
  });

  it('--conversation continues a stored conversation: the request carries the history and seq keeps rising', async () => {
    const home = tempHome();
    const first = await runCli(['chat', '--json', 'first question'], { home, env: env() });
    expect(first.code, first.stderr).toBe(0);
    const ev1 = jsonLines(first.stdout);
    const id = ev1[0]!.conversationId as string;
    const before = mock.requests.length;
    const second = await runCli(['chat', '--json', '--conversation', id, 'second question'], { home, env: env() });
    expect(second.code, second.stderr).toBe(0);
    const body = mock.requests[before]!.body;
    const flat = JSON.stringify(body.messages);
    expect(flat).toContain('first question');
    expect(flat).toContain('Hello from the mock');
    expect(flat).toContain('second question');
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    const ev2 = jsonLines(second.stdout);
    expect(ev2[0]!.seq).toBe(ev1.at(-1)!.seq + 1);
  });

  it('bad usage exits 2 with a one-line reason', async () => {
    const home = tempHome();
    const cases: Array<[string[], RegExp]> = [
      [['chat', '--frobnicate', 'x'], /unknown option '--frobnicate'/i],
      [['chat', '--mode', 'turbo', 'x'], /mode must be text, tools or agent-dev/],
      [['chat', '--provider', 'nope', 'x'], /unknown provider "nope"/],
      [['chat', '--conversation', 'c_doesnotexist', 'x'], /unknown conversation "c_doesnotexist"/],
      [['chat'], /PROMPT is required/],
      [['launch'], /unknown command "launch"/],
    ];
    for (const [args, reason] of cases) {
      const r = await runCli(args, { home, env: env() });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(reason);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
    }
  });

  it('a provider error exits 1 with a one-line reason', async () => {
    const r = await runCli(['chat', '--json', 'x'], { home: tempHome(), env: { ANTHROPIC_API_KEY: 'wrong-key', ANTHROPIC_BASE_URL: mock.url } });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/401|authentication/i);
    const events = jsonLines(r.stdout);
    expect(events.at(-1)!.type).toBe('agent_end');
    expect(events.at(-1)!.status).toBe('error');
  });

  it('a server error that stays down exits 1 after retries', async () => {
    const down = await startMockAnthropic({ script: () => anthropicError(500, 'api_error', 'Internal server error') });
    try {
      const home = tempHome({ runtime: { retryBaseDelayMs: 1, retryMaxAttempts: 2 } });
      const r = await runCli(['chat', 'x'], { home, env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: down.url } });
      expect(r.code).toBe(1);
      expect(down.requests).toHaveLength(2);
    } finally {
      await down.close();
    }
  });

  it('no configured provider and malformed settings are clear usage errors', async () => {
    const none = await runCli(['chat', 'x'], { home: tempHome(), env: {} });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no provider is configured/);
    const bad = await runCli(['chat', 'x'], { home: tempHome({ defaultMode: 'fast' }), env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/settings\.json: defaultMode/);
    const notJson = await runCli(['chat', 'x'], { home: tempHome('{oops'), env: env() });
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/not valid JSON/);
  });
});

/**
 * The hooks plugin's pieces on their own: settings validation (errors name the entry index and
 * the field; bad entries are skipped, options fall back), decisions, the credential scrub,
 * matchers, coalesced payloads and the bounded queue.
 */
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { parseAnswer, verdictOf } from '../../plugins/hooks/decision.js';
import { hookEnv, isSecretVariable } from '../../plugins/hooks/env.js';
import { compileMatcher } from '../../plugins/hooks/matcher.js';
import { hookInput, MergedDeltas, serialize } from '../../plugins/hooks/payload.js';
import { ObserverQueues } from '../../plugins/hooks/queue.js';
import { DEFAULT_OPTIONS, hookLabel, parseHooksSection } from '../../plugins/hooks/settings.js';

describe('hooks settings', () => {
  it('a bad entry is skipped with an error naming its index and field; the good ones stay', () => {
    const r = parseHooksSection([
      { event: 'agent_end', type: 'command', command: 'echo ok' },
      { event: 'agent_end', type: 'command' },
      { event: 'tool_execution_end', type: 'http', url: 'ftp://x' },
      { event: 'turn_end', type: 'command', command: 'x', blocking: true },
      { event: 'agent_end', type: 'command', command: 'x', matcher: 'Write' },
      { event: 'agent_stop', type: 'command', command: 'x' },
      { event: 'agent_end', type: 'shell', command: 'x' },
      { event: 'agent_end', type: 'command', command: 'x', timeout: 5 },
      'echo hi',
      { event: 'tool_execution_start', type: 'http', url: 'https://h.example/x', method: 'GET' },
      { event: 'tool_execution_start', type: 'command', command: 'exit 0', blocking: true, matcher: 'mcp__*', onFailure: 'allow', timeoutMs: 100 },
    ]);
    expect(r.entries.map((e) => e.index)).toEqual([0, 10]);
    expect(r.errors).toEqual([
      'hooks[1].command: is required; this hook is skipped',
      'hooks[2].url: must be an http(s) URL; this hook is skipped',
      'hooks[3].blocking: only agent_start and tool_execution_start hooks can block (this one is on turn_end); this hook is skipped',
      'hooks[4].matcher: only the tool events (tool_execution_start, _update, _end) take a matcher; this hook is skipped',
      expect.stringMatching(/^hooks\[5\]\.event: must be one of agent_start, agent_end, .*; this hook is skipped$/),
      'hooks[6].type: must be "command" or "http"; this hook is skipped',
      expect.stringMatching(/^hooks\[7\]: Unrecognized key: "timeout"; this hook is skipped$/),
      'hooks[8]: must be an object; this hook is skipped',
      'hooks[9].method: must be one of POST, PUT, PATCH; this hook is skipped',
    ]);
    expect(r.options).toEqual(DEFAULT_OPTIONS);
  });

  it('the object form carries options; a bad option keeps its default and says so', () => {
    const r = parseHooksSection({ defaultTimeoutMs: 5000, maxQueue: 0, entries: [{ event: 'agent_start', type: 'command', command: 'x' }] });
    expect(r.options).toEqual({ ...DEFAULT_OPTIONS, defaultTimeoutMs: 5000 });
    expect(r.errors).toEqual([expect.stringMatching(/^hooks\.maxQueue: .* \(using the default, 1000\)$/)]);
    expect(r.prefix).toBe('hooks.entries');
    expect(parseHooksSection({ entries: [{ event: 'agent_end' }] }).errors).toEqual(['hooks.entries[0].type: must be "command" or "http"; this hook is skipped']);
    expect(parseHooksSection('nope').errors).toEqual(['hooks: must be a list of hooks, or an object with "entries"']);
    expect(parseHooksSection(undefined)).toMatchObject({ entries: [], errors: [] });
  });

  it('labels name the hook by index, name and what it runs, never an URL query', () => {
    expect(hookLabel(3, { event: 'agent_end', type: 'command', command: './notify.sh   --all' })).toBe('hook #3 (command: ./notify.sh --all)');
    expect(hookLabel(0, { event: 'agent_end', type: 'http', url: 'https://h.example/in?key=SECRET', name: 'audit' })).toBe('hook #0 "audit" (POST https://h.example/in)');
    expect(hookLabel(1, { event: 'agent_end', type: 'command', command: 'x'.repeat(100) })).toMatch(/^hook #1 \(command: x{59}…\)$/);
  });
});

describe('hook decisions', () => {
  const cmd = (exitCode: number | null, stdout = '', stderr = '') => ({ kind: 'command' as const, exitCode, signal: null, stdout, stderr, timedOut: false, aborted: false, survivors: [], pid: 1, durationMs: 1 });
  it('exit 2 denies with stderr; exit 0 allows, or decides by its JSON; anything else is a failure', () => {
    expect(verdictOf(cmd(2, '', 'not now\n'), 1)).toEqual({ kind: 'deny', reason: 'not now' });
    expect(verdictOf(cmd(2), 1)).toEqual({ kind: 'deny', reason: 'exit code 2 (no reason on stderr)' });
    expect(verdictOf(cmd(0), 1)).toEqual({ kind: 'allow' });
    expect(verdictOf(cmd(0, '{"decision":"deny","reason":"r"}'), 1)).toEqual({ kind: 'deny', reason: 'r' });
    expect(verdictOf(cmd(0, '{"decision":"allow","updatedInput":{"a":1}}'), 1)).toEqual({ kind: 'allow', updatedInput: { a: 1 } });
    expect(verdictOf(cmd(0, '{"continue":true}'), 1)).toEqual({ kind: 'allow' });
    expect(verdictOf(cmd(1, '', 'bad'), 1)).toEqual({ kind: 'failure', reason: 'exited with code 1 (only 0 allows and 2 denies): bad' });
    expect(verdictOf(cmd(null), 1).kind).toBe('failure');
    expect(verdictOf({ ...cmd(null), timedOut: true }, 250)).toEqual({ kind: 'failure', reason: 'timed out after 250 ms (its processes were stopped)' });
    expect(parseAnswer('yes')).toEqual({ kind: 'failure', reason: 'answered something that is not a JSON decision: "yes"' });
    expect(parseAnswer('{"decision":"maybe"}').kind).toBe('failure');
    expect(parseAnswer('[1]').kind).toBe('failure');
  });

  it('HTTP: a 2xx body decides like stdout; other statuses and network errors are failures', () => {
    const http = (status: number | undefined, body = '', error?: string) => ({ kind: 'http' as const, status, body, timedOut: false, aborted: false, durationMs: 1, ...(error ? { error } : {}) });
    expect(verdictOf(http(204), 1)).toEqual({ kind: 'allow' });
    expect(verdictOf(http(200, '{"decision":"deny"}'), 1)).toEqual({ kind: 'deny', reason: 'no reason given' });
    expect(verdictOf(http(403, 'forbidden'), 1)).toEqual({ kind: 'failure', reason: 'answered HTTP 403: forbidden' });
    expect(verdictOf(http(undefined, '', 'ECONNREFUSED'), 1)).toEqual({ kind: 'failure', reason: 'request failed: ECONNREFUSED' });
  });
});

describe('hook environment', () => {
  it('drops provider variables, credential-looking names, connection strings and apiKeyEnv targets', () => {
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GITHUB_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'NPM_TOKEN', 'DB_PASSWORD', 'STRIPE_SECRET', 'DATABASE_URL', 'LIVEAGENT_DATABASE_URL', 'SENTRY_DSN', 'api_key'])
      expect(isSecretVariable(name), name).toBe(true);
    for (const name of ['PATH', 'HOME', 'SSH_AUTH_SOCK', 'DBUS_SESSION_BUS_ADDRESS', 'LANG', 'KEYBOARD_LAYOUT', 'TERM']) expect(isSecretVariable(name), name).toBe(false);
    const env = hookEnv({ PATH: '/bin', WORK_VAR: 'k', ANTHROPIC_API_KEY: 'x' }, { customProviders: [{ id: 'w', format: 'anthropic', baseUrl: 'http://h', apiKeyEnv: 'WORK_VAR' }] }, { LIVEAGENT_HOOK_EVENT: 'agent_end' });
    expect(env).toEqual({ PATH: '/bin', LIVEAGENT_HOOK_EVENT: 'agent_end' });
  });
});

describe('matchers', () => {
  it('exact names, globs, alternatives; no matcher matches everything', async () => {
    const exact = await compileMatcher('Write');
    expect([exact('Write'), exact('WriteX'), exact('write')]).toEqual([true, false, false]);
    const mcp = await compileMatcher('mcp__*');
    expect([mcp('mcp__github__create_issue'), mcp('Write')]).toEqual([true, false]);
    const alt = await compileMatcher('Write|Edit');
    expect([alt('Write'), alt('Edit'), alt('Read')]).toEqual([true, true, false]);
    const brace = await compileMatcher('{Write,mcp__fs__*}');
    expect([brace('Write'), brace('mcp__fs__read'), brace('Read')]).toEqual([true, true, false]);
    expect((await compileMatcher(undefined))('Anything')).toBe(true);
    expect((await compileMatcher('*'))('Anything')).toBe(true);
  });
});

describe('payloads', () => {
  const base = { conversationId: 'c', runId: 'r', ts: 1 };
  const upd = (seq: number, delta: Extract<LifecycleEvent, { type: 'message_update' }>['delta']) => ({ ...base, seq, type: 'message_update' as const, messageId: 'm', delta });
  it('merges consecutive text of one block into one piece, keeps other deltas in order', () => {
    const m = new MergedDeltas(upd(5, { kind: 'text', index: 0, text: 'Hel' }));
    m.add({ kind: 'text', index: 0, text: 'lo' });
    m.add({ kind: 'block', index: 0, block: { type: 'text', text: 'Hello' } });
    m.add({ kind: 'tool_call_start', index: 1, id: 't', name: 'Write' });
    m.add({ kind: 'tool_input', index: 1, json: '{"a"' });
    m.add({ kind: 'tool_input', index: 1, json: ':1}' });
    const input = hookInput(upd(10, { kind: 'tool_input', index: 1, json: ':1}' }), '/w', m);
    expect(input).toEqual({
      ...base,
      seq: 10,
      type: 'message_update',
      messageId: 'm',
      deltas: [
        { kind: 'text', index: 0, text: 'Hello' },
        { kind: 'block', index: 0, block: { type: 'text', text: 'Hello' } },
        { kind: 'tool_call_start', index: 1, id: 't', name: 'Write' },
        { kind: 'tool_input', index: 1, json: '{"a":1}' },
      ],
      coalesced: 6,
      firstSeq: 5,
      workdir: '/w',
    });
  });

  it('image and document bytes are left out of what a hook receives', () => {
    const s = serialize({ result: { content: [{ type: 'image', mimeType: 'image/png', data: 'AAAA' }, { type: 'text', text: 'ok', data: 'kept' }, { type: 'document', mimeType: 'application/pdf', data: 'AAAAAA' }] } });
    expect(JSON.parse(s)).toEqual({
      result: { content: [{ type: 'image', mimeType: 'image/png', dataOmitted: 4 }, { type: 'text', text: 'ok', data: 'kept' }, { type: 'document', mimeType: 'application/pdf', dataOmitted: 6 }] },
    });
  });
});

describe('observer queues', () => {
  const ev = (seq: number, type = 'turn_end', cid = 'c'): LifecycleEvent => ({ conversationId: cid, runId: 'r', seq, ts: 0, type, round: 1, message: { id: 'm', role: 'assistant', content: [], createdAt: 0 } }) as LifecycleEvent;
  it('holds at most maxQueue items, delivers in order, counts drops and reports a burst once when drained', async () => {
    const delivered: number[] = [];
    const bursts: Array<[string, number]> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new ObserverQueues<string>({
      maxQueue: () => 3,
      deliver: async (item) => {
        await gate;
        delivered.push(item.event.seq);
      },
      overflow: (c, n) => bursts.push([c, n]),
      onError: () => {},
    });
    const hooks = ['h'];
    q.push(ev(1), hooks);
    await new Promise((r) => setImmediate(r)); // the worker takes the first item
    for (let i = 2; i <= 100; i++) q.push(ev(i), hooks);
    expect(q.snapshot()).toMatchObject({ queued: 3, maxDepth: 3, dropped: 96 });
    release();
    expect(await q.whenIdle(5000)).toBe(true);
    expect(delivered).toEqual([1, 2, 3, 4]);
    expect(bursts).toEqual([['c', 96]]);
    expect(q.snapshot()).toMatchObject({ queued: 0, conversations: 0, delivered: 4 });
  });

  it('coalesces message_update of the same message only while it waits, and only with the same hooks', async () => {
    const got: Array<{ seq: number; count?: number }> = [];
    const q = new ObserverQueues<string>({ maxQueue: () => 10, deliver: async (i) => void got.push({ seq: i.event.seq, count: i.merged?.count }), overflow: () => {}, onError: () => {} });
    const hooks = ['h'];
    const u = (seq: number, messageId = 'm') => ({ conversationId: 'c', runId: 'r', seq, ts: 0, type: 'message_update' as const, messageId, delta: { kind: 'text' as const, index: 0, text: String(seq) } });
    for (let i = 1; i <= 50; i++) q.push(u(i), hooks);
    q.push(u(51, 'other'), hooks);
    q.push(u(52, 'other'), ['different']);
    await q.whenIdle(5000);
    expect(got).toEqual([{ seq: 50, count: 50 }, { seq: 51, count: 1 }, { seq: 52, count: 1 }]);
  });
});

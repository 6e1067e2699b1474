/**
 * Blocking hooks in real runs with the real Write tool: `tool_execution_start` hooks decide
 * through `beforeToolCall` (exit 2 denies with stderr, JSON decisions, updatedInput, failures
 * deny unless onFailure is "allow", a hang is killed with its whole tree), HTTP hooks decide
 * the same way, and `agent_start` hooks can end the run before the prompt is stored or sent.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../../plugin-api.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { running, sleeper } from '../helpers/processes.js';
import { blackHole, boot, recorder, resultText, runOnce, tmp, until } from './hooks-harness.js';

const write = (id: string, file: string, content: string) => ({ id, name: 'Write', input: { file_path: file, content } });
const gate = (command: string, extra: Record<string, unknown> = {}) => ({ event: 'tool_execution_start', type: 'command', command, blocking: true, ...extra });

describe('blocking tool_execution_start hooks', () => {
  it('exit 2 with matcher Write stops the Write: no file, the result names the hook and the reason, the model goes on', async () => {
    const b = await boot(
      [{ toolCalls: [write('w1', 'secret.txt', 'nope'), { id: 'r1', name: 'Read', input: { file_path: 'seen.txt' } }] }, { text: 'understood' }],
      { hooks: [gate(`echo "writes are reviewed by hand" >&2; exit 2`, { matcher: 'Write' })] },
    );
    fs.writeFileSync(path.join(b.work, 'seen.txt'), 'visible\n');
    const { events, result } = await runOnce(b);
    expect(result.status).toBe('completed');
    expect(fs.existsSync(path.join(b.work, 'secret.txt'))).toBe(false);
    const denied = resultText(events, 'w1');
    expect(denied.isError).toBe(true);
    expect(denied.text).toContain('Tool call blocked');
    expect(denied.text).toContain('hook #0 (command: echo "writes are reviewed by hand"');
    expect(denied.text).toContain('denied Write: writes are reviewed by hand');
    expect(denied.details).toMatchObject({ blocked: true });
    // The matcher is exact: Read is not gated.
    expect(resultText(events, 'r1').text).toContain('visible');
    // The model got the reason and answered.
    const toolMsg = b.provider.requests[1]!.messages.at(-1)!;
    expect(JSON.stringify(toolMsg.content)).toContain('writes are reviewed by hand');
    expect(result.editedFiles ?? []).toEqual([]);
  });

  it('a hook that hangs past its timeout is a deny, and its whole process tree is gone (escaped children too)', async () => {
    const inGroup = sleeper();
    const escaped = sleeper();
    const marker = path.join(tmp(), 'started');
    const b = await boot([{ toolCalls: [write('w1', 'slow.txt', 'x')] }, { text: 'ok' }], {
      hooks: { killGraceMs: 200, entries: [gate(`setsid ${escaped} & ${inGroup} & sleep 0.1; echo started > '${marker}'; wait`, { timeoutMs: 1500 })] },
    });
    const started = Date.now();
    const { events, result } = await runOnce(b);
    expect(result.status).toBe('completed');
    expect(Date.now() - started).toBeLessThan(15_000);
    const r = resultText(events, 'w1');
    expect(r.text).toMatch(/timed out after 1500 ms/);
    expect(fs.existsSync(marker)).toBe(true); // the children were running when it was stopped
    expect(r.text).toContain('onFailure "block"');
    expect(fs.existsSync(path.join(b.work, 'slow.txt'))).toBe(false);
    expect(running(inGroup)).toEqual([]);
    expect(running(escaped)).toEqual([]);
  });

  it('stopping the run stops a blocking hook that is still deciding (its tree is killed when the run ends)', async () => {
    const hang = sleeper();
    const marker = path.join(tmp(), 'started');
    const b = await boot([{ toolCalls: [write('w1', 'x.txt', 'x')] }, { text: 'ok' }], {
      runtime: { retryMaxAttempts: 1, toolAbortGraceMs: 300 },
      hooks: [gate(`echo started > '${marker}'; ${hang}`, { timeoutMs: 60_000 })],
    });
    const run = b.kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools', workdir: b.work });
    await until(() => fs.existsSync(marker) && running(hang).length > 0, 15_000, 'the hook to start');
    run.abort('test');
    expect((await run.result).status).toBe('aborted');
    await until(() => running(hang).length === 0, 10_000, 'the hook to be stopped');
    expect(fs.existsSync(path.join(b.work, 'x.txt'))).toBe(false);
  });

  it('onFailure "allow": a failing hook (exit 1, a timeout, a launch failure) lets the call run', async () => {
    const b = await boot([{ toolCalls: [write('w1', 'a.txt', 'A'), write('w2', 'b.txt', 'B'), write('w3', 'c.txt', 'C')] }, { text: 'ok' }], {
      hooks: [
        gate('exit 1', { matcher: 'Write', onFailure: 'allow' }),
        gate('sleep 5', { matcher: 'Write', onFailure: 'allow', timeoutMs: 200 }),
        { event: 'tool_execution_start', type: 'http', url: 'http://127.0.0.1:9/refused', blocking: true, onFailure: 'allow' },
      ],
    });
    const { result } = await runOnce(b);
    expect(result.status).toBe('completed');
    for (const [f, c] of [['a.txt', 'A'], ['b.txt', 'B'], ['c.txt', 'C']]) expect(fs.readFileSync(path.join(b.work, f!), 'utf8')).toBe(c);
  });

  it('by default a failure denies: another exit code, an answer that is no decision, a missing workdir', async () => {
    const b = await boot([{ toolCalls: [write('w1', 'a.txt', 'A')] }, { toolCalls: [write('w2', 'b.txt', 'B')] }, { text: 'ok' }], {
      hooks: [gate(`if grep -q a.txt; then echo oops >&2; exit 1; else echo "looks fine to me"; fi`)],
    });
    const { events } = await runOnce(b);
    expect(resultText(events, 'w1').text).toContain('exited with code 1 (only 0 allows and 2 denies): oops');
    expect(resultText(events, 'w2').text).toContain('answered something that is not a JSON decision: "looks fine to me"');
    expect(fs.readdirSync(b.work)).toEqual([]);

    const gone = path.join(tmp(), 'gone');
    const c = await boot([{ toolCalls: [write('w1', path.join(b.work, 'x.txt'), 'X')] }, { text: 'ok' }], { hooks: [gate('exit 0')] });
    const run = c.kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools', workdir: gone });
    const r = await run.result;
    const end = r.messages.find((m) => m.role === 'tool')!.content[0]!;
    expect(JSON.stringify(end)).toContain(`could not be started: the workdir ${gone} is not a folder`);
  });

  it('a JSON decision: deny with a reason, allow with updatedInput (validated by the tool, applied to what runs)', async () => {
    const b = await boot(
      [{ toolCalls: [write('w1', 'keep.txt', 'original')] }, { toolCalls: [write('w2', 'bad.txt', 'x')] }, { toolCalls: [write('w3', 'no.txt', 'x')] }, { text: 'ok' }],
      {
        hooks: [
          gate(
            `input=$(cat); case "$input" in
              *keep.txt*) printf '%s' '{"decision":"allow","updatedInput":{"file_path":"keep.txt","content":"rewritten by the hook"}}' ;;
              *bad.txt*) printf '%s' '{"updatedInput":{"file_path":"bad.txt","content":42}}' ;;
              *) printf '%s' '{"decision":"deny","reason":"no.txt is off limits"}' ;;
            esac`,
          ),
        ],
      },
    );
    const { events } = await runOnce(b);
    expect(fs.readFileSync(path.join(b.work, 'keep.txt'), 'utf8')).toBe('rewritten by the hook');
    expect(resultText(events, 'w1').isError).toBe(false);
    expect(resultText(events, 'w2').text).toMatch(/returned an updatedInput that Write refuses \(content: .*\); the call was not run/);
    expect(fs.existsSync(path.join(b.work, 'bad.txt'))).toBe(false);
    expect(resultText(events, 'w3').text).toContain('denied Write: no.txt is off limits');
    expect(fs.existsSync(path.join(b.work, 'no.txt'))).toBe(false);
  });

  it('globs reach every tool, MCP-named ones included; the hook gets the call as JSON with LIVEAGENT_TOOL_NAME', async () => {
    const mcpLike: Plugin = {
      name: 'test-mcp-like',
      apply(ctx) {
        ctx.registerTool({ name: 'mcp__github__create_issue', description: 'x', parameters: z.object({ title: z.string() }), execute: async () => ({ content: [{ type: 'text', text: 'created' }] }) });
      },
    };
    const seen = path.join(tmp(), 'seen.jsonl');
    const b = await boot(
      [{ toolCalls: [{ id: 'm1', name: 'mcp__github__create_issue', input: { title: 'hi' } }, write('w1', 'ok.txt', 'fine')] }, { text: 'ok' }],
      { hooks: [gate(`{ cat; echo " $LIVEAGENT_TOOL_NAME"; } >> '${seen}'; echo "no MCP writes" >&2; exit 2`, { matcher: 'mcp__*' })] },
      [mcpLike],
    );
    const { events } = await runOnce(b);
    expect(resultText(events, 'm1').text).toContain('denied mcp__github__create_issue: no MCP writes');
    expect(fs.readFileSync(path.join(b.work, 'ok.txt'), 'utf8')).toBe('fine');
    const line = fs.readFileSync(seen, 'utf8').trim();
    expect(line.endsWith(' mcp__github__create_issue')).toBe(true);
    expect(JSON.parse(line.slice(0, line.lastIndexOf(' ')))).toMatchObject({ type: 'tool_execution_start', toolName: 'mcp__github__create_issue', toolCallId: 'm1', args: { title: 'hi' }, workdir: b.work, round: 1 });
  });

  it('HTTP blocking hooks: a deny body, a 500, and a black-hole URL aborted at the timeout', async () => {
    const rec = await recorder((body) => (JSON.stringify(body).includes('deny.txt') ? { body: '{"decision":"deny","reason":"policy says no"}' } : { status: 500, body: 'boom' }));
    const hole = await blackHole();
    const b = await boot([{ toolCalls: [write('w1', 'deny.txt', 'x')] }, { toolCalls: [write('w2', 'err.txt', 'x')] }, { text: 'ok' }], {
      hooks: [{ event: 'tool_execution_start', type: 'http', url: `${rec.url}?token=abc`, blocking: true, matcher: 'Write' }],
    });
    const { events, result } = await runOnce(b);
    expect(result.status).toBe('completed');
    // The label names the endpoint without its query (which may hold a token).
    expect(resultText(events, 'w1').text).toContain(`hook #0 (POST ${new URL(rec.url).origin}/hook) denied Write: policy says no`);
    expect(resultText(events, 'w2').text).toContain('answered HTTP 500: boom');
    expect(fs.readdirSync(b.work)).toEqual([]);
    expect(rec.bodies[0]).toMatchObject({ type: 'tool_execution_start', toolName: 'Write', args: { file_path: 'deny.txt' } });

    const c = await boot([{ toolCalls: [write('w1', 'hole.txt', 'x')] }, { text: 'ok' }], { hooks: [{ event: 'tool_execution_start', type: 'http', url: hole, blocking: true, timeoutMs: 300 }] });
    const started = Date.now();
    const second = await runOnce(c);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(resultText(second.events, 'w1').text).toContain('timed out after 300 ms');
    expect(fs.existsSync(path.join(c.work, 'hole.txt'))).toBe(false);
  });
});

describe('blocking agent_start hooks', () => {
  it('a denied prompt ends the run with a clear error before any request, and is never stored', async () => {
    const stdin = path.join(tmp(), 'prompt.json');
    const b = await boot([{ text: 'answer' }], {
      hooks: [{ event: 'agent_start', type: 'command', blocking: true, command: `input=$(cat); printf '%s' "$input" > '${stdin}'; case "$input" in *forbidden*) echo "that topic is off limits" >&2; exit 2 ;; esac` }],
    });
    const first = await runOnce(b, 'tell me the forbidden thing', 'text');
    expect(first.result.status).toBe('error');
    expect(first.result.error?.message).toMatch(/^The prompt was blocked by hook #0 \(command: input=\$\(cat\);.*\): that topic is off limits$/);
    expect(first.result.error).toMatchObject({ code: 'plugin', plugin: 'hooks', hook: 'saveUserMessage' });
    expect(first.events.map((e) => e.type)).toEqual(['agent_start', 'error', 'agent_end']);
    expect(b.provider.requests).toHaveLength(0);
    expect(JSON.parse(fs.readFileSync(stdin, 'utf8'))).toMatchObject({ type: 'agent_start', conversationId: first.result.conversationId, mode: 'text', provider: 'fake', userMessage: { role: 'user', content: [{ type: 'text', text: 'tell me the forbidden thing' }] } });

    // The next prompt of the conversation is allowed, and the denied one is not in its history.
    const run = b.kernel.runtime.startRun({ conversationId: first.result.conversationId, input: [{ type: 'text', text: 'something else' }], mode: 'text', workdir: b.work });
    expect((await run.result).status).toBe('completed');
    expect(b.provider.requests[0]!.messages.map((m) => JSON.stringify(m.content))).toEqual([JSON.stringify([{ type: 'text', text: 'something else' }])]);
  });

  it('with the history store: a denied prompt is not stored, the conversation goes on without it', async () => {
    const deny = { event: 'agent_start', type: 'command', blocking: true, command: `grep -q forbidden && { echo "off limits" >&2; exit 2; }; exit 0` };
    const b = await boot([{ text: 'hi there' }, { text: 'fine' }], { hooks: [deny] }, [historySqlite]);
    const first = await runOnce(b, 'hello', 'text');
    expect(first.result.status).toBe('completed');
    const cont = (text: string) => b.kernel.runtime.startRun({ conversationId: first.result.conversationId, input: [{ type: 'text', text }], mode: 'text', workdir: b.work }).result;
    expect((await cont('the forbidden one')).status).toBe('error');
    expect((await cont('and now?')).status).toBe('completed');
    const texts = b.provider.requests[1]!.messages.map((m) => m.content.map((c) => (c.type === 'text' ? c.text : '')).join(''));
    expect(texts).toEqual(['hello', 'hi there', 'and now?']);
    const history = b.kernel.services.get<HistoryService>(HISTORY_SERVICE)!;
    const detail = await history.getConversation(first.result.conversationId);
    expect(JSON.stringify(detail!.messages)).not.toContain('forbidden');
    expect(detail!.messages.filter((m) => m.role === 'user')).toHaveLength(2);
  });

  it('a failing agent_start hook denies by default and allows with onFailure "allow"', async () => {
    const b = await boot([{ text: 'a' }], { hooks: [{ event: 'agent_start', type: 'command', blocking: true, command: 'sleep 5', timeoutMs: 200 }] });
    const r = await runOnce(b, 'hi', 'text');
    expect(r.result.status).toBe('error');
    expect(r.result.error?.message).toMatch(/timed out after 200 ms/);
    const c = await boot([{ text: 'a' }], { hooks: [{ event: 'agent_start', type: 'command', blocking: true, command: 'exit 7', onFailure: 'allow' }] });
    expect((await runOnce(c, 'hi', 'text')).result.status).toBe('completed');
  });
});

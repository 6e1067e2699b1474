/**
 * Observing hooks in real runs (scripted provider, the real Write tool): a command hook gets
 * each event as JSON on stdin with its variables, an HTTP hook gets the events in order, no
 * credential reaches a hook, a streamed reply is coalesced for a slow hook, the queue stays
 * bounded and reports its overflow once, and with no hook there is no tap at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../../plugin-api.js';
import { boot, jsonLines, recorder, runOnce, tmp } from './hooks-harness.js';

const write = (id: string, file: string, content: string) => ({ id, name: 'Write', input: { file_path: file, content } });

describe('observing hooks', () => {
  it('a command hook on tool_execution_end receives each call as JSON on stdin, with its variables, in the workdir', async () => {
    const out = path.join(tmp(), 'events.jsonl');
    const vars = path.join(path.dirname(out), 'vars.txt');
    const b = await boot([{ toolCalls: [write('w1', 'one.txt', 'first\n')] }, { toolCalls: [write('w2', 'two.txt', 'second\n')] }, { text: 'done' }], {
      hooks: [
        {
          event: 'tool_execution_end',
          type: 'command',
          command: `{ cat; echo; } >> '${out}'; printf '%s|%s|%s|%s|%s\\n' "$LIVEAGENT_HOOK_EVENT" "$LIVEAGENT_TOOL_NAME" "$LIVEAGENT_CONVERSATION_ID" "$LIVEAGENT_WORKDIR" "$PWD" >> '${vars}'`,
        },
      ],
    });
    const { result } = await runOnce(b);
    expect(result.status).toBe('completed');
    expect(await b.hooks.whenIdle(20_000)).toBe(true);
    const got = jsonLines(out);
    expect(got.map((e) => [e.type, e.toolName, e.toolCallId])).toEqual([
      ['tool_execution_end', 'Write', 'w1'],
      ['tool_execution_end', 'Write', 'w2'],
    ]);
    expect(got[0]).toMatchObject({ conversationId: result.conversationId, runId: result.runId, workdir: b.work, result: { toolName: 'Write', isError: false } });
    expect(typeof got[0]!.seq).toBe('number');
    expect(fs.readFileSync(path.join(b.work, 'one.txt'), 'utf8')).toBe('first\n'); // observing never stops the tool
    const lines = fs.readFileSync(vars, 'utf8').trim().split('\n');
    expect(lines).toEqual([0, 1].map(() => `tool_execution_end|Write|${result.conversationId}|${b.work}|${b.work}`));
    expect(b.failures).toEqual([]);
  });

  it('an HTTP hook on every event type receives the events in the order the run emitted them', async () => {
    const rec = await recorder();
    const events = ['agent_start', 'turn_start', 'message_start', 'message_end', 'tool_execution_start', 'tool_execution_end', 'turn_end', 'agent_end'] as const;
    const b = await boot([{ text: 'writing', toolCalls: [write('w1', 'a.txt', 'a')] }, { text: 'done' }], {
      hooks: { entries: events.map((event) => ({ event, type: 'http' as const, url: rec.url, headers: { 'x-hook-secret': 'abc' } })) },
    });
    const { events: emitted, result } = await runOnce(b);
    expect(result.status).toBe('completed');
    expect(await b.hooks.whenIdle(20_000)).toBe(true);
    const expected = emitted.filter((e) => (events as readonly string[]).includes(e.type));
    expect(rec.bodies.map((x) => x.type)).toEqual(expected.map((e) => e.type));
    expect(rec.bodies.map((x) => x.seq)).toEqual(expected.map((e) => e.seq));
    expect(rec.bodies.every((x) => x.conversationId === result.conversationId && x.workdir === b.work)).toBe(true);
    expect(rec.headers[0]!['content-type']).toBe('application/json');
    expect(rec.headers[0]!['x-hook-secret']).toBe('abc');
    expect(rec.bodies.find((x) => x.type === 'tool_execution_start')).toMatchObject({ toolName: 'Write', args: { file_path: 'a.txt', content: 'a' } });
  });

  it('no provider key or other credential reaches a command hook; ordinary variables do', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      ANTHROPIC_API_KEY: 'sk-ant-hooks-test',
      OPENAI_API_KEY: 'sk-openai-hooks-test',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      GEMINI_API_KEY: 'gem-hooks-test',
      GITHUB_TOKEN: 'ghp_hooks_test',
      MY_SERVICE_SECRET: 'shh',
      LA_HOOKS_WORK_KEY_VAR: 'named-by-a-custom-provider',
      LIVEAGENT_DATABASE_URL: 'postgres://u:pw@db/x',
      LA_HOOKS_VISIBLE: 'yes',
    });
    try {
      const envFile = path.join(tmp(), 'env.txt');
      const b = await boot([{ text: 'hi' }], {
        customProviders: [{ id: 'work', format: 'anthropic', baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'LA_HOOKS_WORK_KEY_VAR' }],
        hooks: [{ event: 'agent_end', type: 'command', command: `env > '${envFile}'` }],
      });
      await runOnce(b, 'hi', 'text');
      expect(await b.hooks.whenIdle(20_000)).toBe(true);
      const env = fs.readFileSync(envFile, 'utf8');
      for (const secret of ['sk-ant-hooks-test', 'sk-openai-hooks-test', 'gem-hooks-test', 'ghp_hooks_test', 'shh', 'named-by-a-custom-provider', 'postgres://']) expect(env).not.toContain(secret);
      expect(env).not.toMatch(/^(ANTHROPIC|OPENAI|GEMINI)_/m);
      expect(env).toContain('LA_HOOKS_VISIBLE=yes');
      expect(env).toContain('LIVEAGENT_HOOK_EVENT=agent_end');
      expect(env).toMatch(/^PATH=/m);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it('message_update is coalesced for a slow hook: fewer deliveries, the whole text in order, message_end after it', async () => {
    const out = path.join(tmp(), 'updates.jsonl');
    const pieces = Array.from({ length: 300 }, (_, i) => `p${i} `);
    const b = await boot([{ text: pieces }], {
      hooks: [
        { event: 'message_update', type: 'command', command: `{ cat; echo; } >> '${out}'; sleep 0.2` },
        { event: 'message_end', type: 'command', command: `{ cat; echo; } >> '${out}'` },
      ],
    });
    const { events } = await runOnce(b, 'stream', 'text');
    expect(await b.hooks.whenIdle(30_000)).toBe(true);
    const got = jsonLines(out);
    const updates = got.filter((e) => e.type === 'message_update');
    expect(got.at(-1)!.type).toBe('message_end');
    const emittedUpdates = events.filter((e) => e.type === 'message_update').length;
    expect(updates.length).toBeLessThan(emittedUpdates);
    expect(updates.reduce((n, u) => n + (u.coalesced as number), 0)).toBe(emittedUpdates);
    const text = updates.flatMap((u) => (u.deltas as Array<{ kind: string; text?: string }>).filter((d) => d.kind === 'text').map((d) => d.text)).join('');
    expect(text).toBe(pieces.join(''));
    // The text of one block that several updates streamed is one concatenated piece; `delta` is
    // kept exactly when a delivery holds one piece.
    const merged = updates.find((u) => (u.coalesced as number) > 1)!;
    expect(merged.firstSeq as number).toBeLessThan(merged.seq as number);
    for (const u of updates) {
      const deltas = u.deltas as Array<{ kind: string }>;
      expect(deltas.filter((d) => d.kind === 'text').length).toBeLessThanOrEqual(1);
      expect(u.delta).toEqual(deltas.length === 1 ? deltas[0] : undefined);
    }
    expect((updates.at(-1)!.deltas as Array<{ kind: string }>).at(-1)!.kind).toBe('block'); // the block's final form, last
    expect(b.hooks.stats().coalesced).toBe(emittedUpdates - updates.length);
  });

  it('the queue is bounded: a slow hook and many events drop the excess, count it and report the burst once', async () => {
    const ping: Plugin = {
      name: 'test-ping',
      apply(ctx) {
        ctx.registerTool({ name: 'Ping', description: 'ping', parameters: z.object({ n: z.number() }), concurrency: 'parallel', execute: async (a: { n: number }) => ({ content: [{ type: 'text', text: `pong ${a.n}` }] }) });
      },
    };
    const calls = Array.from({ length: 10 }, (_, i) => ({ id: `p${i}`, name: 'Ping', input: { n: i } }));
    const b = await boot(
      [{ toolCalls: calls }, { text: 'done' }],
      { hooks: { maxQueue: 3, entries: [{ event: 'tool_execution_end', type: 'command', command: 'cat > /dev/null; sleep 0.3' }] } },
      [ping],
    );
    const { result } = await runOnce(b);
    expect(result.status).toBe('completed');
    expect(await b.hooks.whenIdle(30_000)).toBe(true);
    const s = b.hooks.stats();
    expect(s.maxDepth).toBeLessThanOrEqual(3);
    expect(s.dropped).toBeGreaterThan(0);
    expect(s.delivered + s.dropped).toBe(10);
    expect(s.queued).toBe(0);
    const reports = b.failures.filter((f) => /fell behind/.test(f.message));
    expect(reports).toHaveLength(1);
    expect(reports[0]!.message).toContain(`${s.dropped} event(s) were dropped`);
    expect(reports[0]!.message).toContain('hooks.maxQueue');
  });

  it('a bad entry is reported naming its index and field and skipped, the others run; a settings change applies without a restart', async () => {
    const out = path.join(tmp(), 'ends.txt');
    const b = await boot([{ text: 'a' }, { text: 'b' }], {
      hooks: [
        { event: 'agent_end', type: 'command', comand: 'typo' },
        { event: 'agent_end', type: 'command', command: `echo first >> '${out}'` },
      ],
    });
    expect(b.failures.map((f) => f.message)).toEqual(['plugin "hooks": settings: hooks[0].command: is required, and hooks[0]: Unrecognized key: "comand"; this hook is skipped']);
    await runOnce(b, 'one', 'text');
    await b.hooks.whenIdle(20_000);
    expect(fs.readFileSync(out, 'utf8')).toBe('first\n');
    // The change reaches the running plugin through the settings store's change listener.
    await b.kernel.settings.update({ hooks: [{ event: 'agent_end', type: 'command', command: `echo second >> '${out}'` }] });
    await runOnce(b, 'two', 'text');
    await b.hooks.whenIdle(20_000);
    expect(fs.readFileSync(out, 'utf8')).toBe('first\nsecond\n');
  });

  it('with no hook configured there is no tap at all; settings changes add and remove the taps', async () => {
    const b = await boot([{ text: 'a' }, { text: 'b' }], {});
    const used = () => ({ event: b.kernel.sessionHooks.event.isUsed(), before: b.kernel.sessionHooks.beforeToolCall.isUsed() });
    expect(used()).toEqual({ event: false, before: false });
    await b.kernel.settings.update({ hooks: [{ event: 'tool_execution_start', type: 'command', command: 'exit 0', blocking: true }] });
    await b.hooks.reload();
    expect(used()).toEqual({ event: false, before: true });
    await b.kernel.settings.update({ hooks: [{ event: 'agent_end', type: 'command', command: 'exit 0' }] });
    await b.hooks.reload();
    expect(used()).toEqual({ event: true, before: false });
    await b.kernel.settings.update({ hooks: [] });
    await b.hooks.reload();
    expect(used()).toEqual({ event: false, before: false });
  });
});

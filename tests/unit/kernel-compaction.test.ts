/**
 * The kernel's compaction seam, driven by scripted taps: each trigger asks the hook once, a
 * checkpoint is stored and replaces the window, the stages place the kernel's parts, and a
 * failing or invalid answer leaves the history as it was.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { CheckpointRecord, CompactionAnswer, CompactionRequest, LifecycleEvent, Message, Plugin, ProviderRequest } from '../../plugin-api.js';
import { SystemPromptStages } from '../../core/define-plugin.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { CONTINUE_AFTER_COMPACTION } from '../../core/run.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});

const text = (t: string) => [{ type: 'text' as const, text: t }];
const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : b.type === 'tool_result' ? `[result ${b.toolCallId}]` : b.type === 'tool_call' ? `[call ${b.id}]` : '')).join('');
const systemText = (r: ProviderRequest) => r.system.map((p) => p.text).join('\n');

type Answer = (req: CompactionRequest) => CompactionAnswer | undefined | Promise<CompactionAnswer | undefined>;

/** A compaction tap that records what it was asked and answers with `answer`. */
function compactor(answer: Answer, stored: CheckpointRecord[] = []) {
  const asked: CompactionRequest[] = [];
  const plugin: Plugin = {
    name: 'test-compactor',
    apply(ctx) {
      ctx.sessionHooks.compaction.tap((req) => {
        asked.push({ ...req, messages: req.messages.slice() });
        return answer(req);
      });
      ctx.sessionHooks.saveCheckpoint.tap((record) => void stored.push(record));
    },
  };
  return { plugin, asked, stored };
}

/** Summarize everything before the newest user message. */
const summarizeOld: Answer = (req) => {
  const lastUser = req.messages.map((m) => m.role).lastIndexOf('user');
  req.begin();
  return {
    checkpoint: {
      kind: 'summary',
      summary: `SUMMARY(${req.messages.slice(0, lastUser).map(textOf).join('|')})`,
      firstKeptMessageId: req.messages[lastUser]!.id,
      coveredMessageCount: lastUser,
      prunedToolCallIds: [],
      ledger: { read: ['a.txt'], modified: ['b.txt'] },
      provider: req.provider,
      model: req.model,
      tokensBefore: 1000,
      tokensAfter: 100,
    },
  };
};

async function boot(steps: FakeStep[] | ((req: ProviderRequest, i: number) => FakeStep), extra: Plugin[], settings = {}) {
  const provider = fakeProvider(steps);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-compact-'));
  const kernel = await createKernel({ home, plugins: [plugin, ...extra], settings, thirdParty: false });
  kernels.push(kernel);
  return { kernel, provider };
}

async function run(kernel: Kernel, input: string, conversationId?: string, mode: 'text' | 'tools' = 'text') {
  const r = kernel.runtime.startRun({ input: text(input), mode, ...(conversationId ? { conversationId } : {}) });
  const events = await collectAll<LifecycleEvent>(r.events);
  return { result: await r.result, events, conversationId: r.conversationId };
}

const compactionEvents = (events: LifecycleEvent[]) => events.flatMap((e) => (e.type === 'compaction' ? [e.payload] : []));

describe('kernel compaction seam', () => {
  it('places the kernel parts at their stages, around plugin parts', async () => {
    const staged: Plugin = {
      name: 'staged',
      apply(ctx) {
        ctx.sessionHooks.systemPrompt.tap((parts) => [...parts, { id: 'memory', text: 'MEMORY' }], { stage: SystemPromptStages.MEMORY });
        ctx.sessionHooks.systemPrompt.tap((parts) => [...parts, { id: 'skills', text: 'SKILLS' }], { stage: SystemPromptStages.SKILLS });
      },
    };
    const { plugin } = compactor((req) => (req.messages.length > 1 ? summarizeOld(req) : undefined));
    const ruled: Plugin = {
      name: 'ruled-tool',
      apply(ctx) {
        ctx.registerTool({ name: 'Noop', description: 'does nothing', parameters: z.object({}), promptRules: ['Call Noop sparingly.'], execute: async () => ({ content: [] }) });
      },
    };
    const { kernel, provider } = await boot([{ text: 'one' }, { toolCalls: [{ id: 't1', name: 'Noop', input: {} }] }, { text: 'done' }], [staged, plugin, ruled], { systemPrompt: 'Be brief.' });
    const first = await run(kernel, 'hi');
    await run(kernel, 'again', first.conversationId, 'tools');
    expect(provider.requests[0]!.system.map((p) => p.id)).toEqual(['base', 'user-settings', 'skills', 'memory']);
    const ids = provider.requests[1]!.system.map((p) => p.id);
    expect(ids).toEqual(['base', 'user-settings', 'skills', 'memory', 'compaction-summary', 'tool-rules']);
    // Re-injected every request, never summarized: the user's prompt and the tool rules survive.
    expect(provider.requests[2]!.system.map((p) => p.id)).toEqual(ids);
    expect(systemText(provider.requests[2]!)).toContain('Be brief.');
    expect(systemText(provider.requests[2]!)).toContain('Call Noop sparingly.');
  });

  it('pre-send: the checkpoint replaces the covered messages and the new user message comes after it', async () => {
    const stored: CheckpointRecord[] = [];
    let compactNow = false;
    const { plugin, asked } = compactor((req) => (compactNow ? summarizeOld(req) : { budget: { usedTokens: 10, contextWindow: 1000, thresholdTokens: 800 } }), stored);
    const { kernel, provider } = await boot((req) => ({ text: `reply to ${textOf(req.messages.at(-1)!)}` }), [plugin]);
    const a = await run(kernel, 'one');
    expect(a.events.find((e) => e.type === 'context')).toMatchObject({ payload: { usedTokens: 10, contextWindow: 1000, thresholdTokens: 800, round: 1 } });
    await run(kernel, 'two', a.conversationId);
    compactNow = true;
    const c = await run(kernel, 'three', a.conversationId);
    expect(asked.map((q) => [q.trigger, q.force])).toEqual([['pre-send', false], ['pre-send', false], ['pre-send', false]]);
    const req = provider.requests.at(-1)!;
    expect(req.messages.map(textOf)).toEqual(['three']);
    expect(systemText(req)).toContain('SUMMARY(one|reply to one|two|reply to two)');
    expect(systemText(req)).toContain('Files read so far: a.txt');
    expect(systemText(req)).toContain('Files modified so far: b.txt');
    expect(compactionEvents(c.events).map((p) => p.phase)).toEqual(['start', 'end']);
    expect(compactionEvents(c.events)[1]).toMatchObject({ trigger: 'pre-send', tokensBefore: 1000, tokensAfter: 100, coveredMessageCount: 4, kind: 'summary' });
    expect(stored).toHaveLength(1);
    expect(stored[0]!.checkpoint).toMatchObject({ trigger: 'pre-send', firstKeptMessageId: asked[2]!.messages.at(-1)!.id });

    // The next run goes on from the checkpoint (in memory: no store is loaded here).
    compactNow = false;
    await run(kernel, 'four', a.conversationId);
    expect(provider.requests.at(-1)!.messages.map(textOf)).toEqual(['three', 'reply to three', 'four']);
    expect(asked.at(-1)!.checkpoint?.summary).toContain('SUMMARY(');
  });

  it('post-tool: the request after tool results asks with trigger post-tool', async () => {
    const { plugin, asked } = compactor(() => undefined);
    const { kernel } = await boot([{ toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] }, { text: 'done' }], [plugin, echoToolPlugin]);
    await run(kernel, 'go', undefined, 'tools');
    expect(asked.map((q) => q.trigger)).toEqual(['pre-send', 'post-tool']);
  });

  it('mid-stream: a reply past the budget is stopped, kept marked partial, compacted, and continued', async () => {
    const { plugin, asked } = compactor((req) =>
      req.trigger === 'mid-stream' ? summarizeOld(req) : { budget: { usedTokens: 10, contextWindow: 1000, thresholdTokens: 800, replyChars: 12 } },
    );
    const { kernel, provider } = await boot([{ text: ['old'] }, { text: ['0123456789', 'abcdefghij', 'never sent'] }, { text: 'the rest' }], [plugin]);
    const a = await run(kernel, 'first');
    const b = await run(kernel, 'write a lot', a.conversationId);
    expect(b.result.status).toBe('completed');
    expect(asked.map((q) => [q.trigger, q.force])).toEqual([['pre-send', false], ['pre-send', false], ['mid-stream', true], ['pre-send', false]]);
    const partial = b.result.messages[0]!;
    expect(textOf(partial)).toBe('0123456789abcdefghij');
    expect(partial.meta).toMatchObject({ partial: true, interrupted: 'compaction' });
    const next = provider.requests.at(-1)!;
    // The partial reply and the user's message stay verbatim; a synthetic turn asks to continue.
    expect(next.messages.map(textOf)).toEqual(['write a lot', '0123456789abcdefghij', CONTINUE_AFTER_COMPACTION]);
    expect(next.messages.at(-1)!.meta).toEqual({ synthetic: 'continue' });
    expect(systemText(next)).toContain('SUMMARY(first|old)');
    expect(textOf(b.result.messages.at(-1)!)).toBe('the rest');
    // Once per run: the continuation is not stopped again.
    expect(compactionEvents(b.events).filter((p) => p.phase === 'end')).toHaveLength(1);
  });

  it('mid-stream with nothing to compact ends the run with the partial reply kept and a clear error', async () => {
    const { plugin } = compactor((req) => (req.trigger === 'mid-stream' ? { failed: 'there is too little old history to summarize' } : { budget: { usedTokens: 10, contextWindow: 1000, thresholdTokens: 800, replyChars: 5 } }));
    const { kernel, provider } = await boot([{ text: ['0123456789', 'never sent'] }], [plugin]);
    const r = await run(kernel, 'write');
    expect(r.result.status).toBe('error');
    expect(r.result.error?.message).toMatch(/outgrew the context window of fake-1 .*too little old history.*what it wrote is kept/);
    expect(r.result.messages[0]!.meta).toMatchObject({ interrupted: 'compaction' });
    expect(provider.requests).toHaveLength(1);
  });

  it('overflow: compacts once and retries once; a second overflow is a clear error, never a loop', async () => {
    const overflow: FakeStep = { error: { message: 'prompt is too long: 5000 tokens > 4000 maximum', code: 'context_overflow', status: 400 } };
    const { plugin, asked } = compactor((req) => (req.trigger === 'overflow' ? summarizeOld(req) : undefined));
    const { kernel, provider } = await boot([{ text: 'a' }, overflow, { text: 'fits now' }, overflow, overflow, { text: 'never' }], [plugin]);
    const a = await run(kernel, 'one');
    const b = await run(kernel, 'two', a.conversationId);
    expect(b.result.status).toBe('completed');
    expect(asked.map((q) => q.trigger)).toEqual(['pre-send', 'pre-send', 'overflow']);
    expect(asked[2]!.error).toMatchObject({ code: 'context_overflow', message: 'prompt is too long: 5000 tokens > 4000 maximum' });
    expect(provider.requests).toHaveLength(3);
    expect(provider.requests[2]!.messages.map(textOf)).toEqual(['two']);
    expect(b.events.filter((e) => e.type === 'message_start')).toHaveLength(1);

    const c = await run(kernel, 'three', a.conversationId);
    expect(c.result.status).toBe('error');
    expect(provider.requests).toHaveLength(5);
    expect(c.result.error?.message).toMatch(/prompt is too long.*does not fit the context window of fake-1/);
  });

  it('a failing or invalid compaction leaves the history as it was and the chat usable', async () => {
    let mode: 'throw' | 'failed' | 'split' = 'throw';
    const { plugin } = compactor((req) => {
      if (req.messages.length < 2) return undefined;
      req.begin();
      if (mode === 'throw') throw new Error('summary endpoint down');
      if (mode === 'failed') return { failed: 'the summary came back empty twice' };
      const tool = req.messages.find((m) => m.role === 'tool')!;
      return { checkpoint: { kind: 'summary', summary: 'x', firstKeptMessageId: tool.id, coveredMessageCount: 1, prunedToolCallIds: [], ledger: { read: [], modified: [] }, tokensBefore: 1, tokensAfter: 1 } };
    });
    const { kernel, provider } = await boot((req, i) => (i === 0 ? { toolCalls: [{ id: 't1', name: 'Echo', input: { text: 'a' } }] } : { text: `ok ${i}` }), [plugin, echoToolPlugin]);
    const a = await run(kernel, 'one', undefined, 'tools');
    const before = provider.requests.at(-1)!.messages.length;
    for (const m of ['throw', 'failed', 'split'] as const) {
      mode = m;
      const r = await run(kernel, m, a.conversationId);
      expect(r.result.status).toBe('completed');
      const errors = compactionEvents(r.events).filter((p) => p.phase === 'error');
      expect(errors).toHaveLength(1);
      expect(String(errors[0]!.error)).toMatch(m === 'throw' ? /summary endpoint down/ : m === 'failed' ? /empty twice/ : /points at a tool result/);
    }
    // Nothing was dropped: every request still carries the whole conversation.
    expect(provider.requests.at(-1)!.messages.length).toBe(before + 6);
    expect(systemText(provider.requests.at(-1)!)).not.toContain('context-checkpoint');
  });

  it('manual: runtime.compact compacts a conversation between runs and refuses during one', async () => {
    const { plugin, asked } = compactor((req) => {
      if (req.trigger !== 'manual') return undefined;
      req.begin();
      return { checkpoint: { kind: 'summary', summary: 'MANUAL', coveredMessageCount: req.messages.length, prunedToolCallIds: [], ledger: { read: [], modified: [] }, tokensBefore: 50, tokensAfter: 5 } };
    });
    const { kernel, provider } = await boot((req, i) => (i === 1 ? { hang: true } : { text: `r${i}` }), [plugin]);
    const seen: LifecycleEvent[] = [];
    kernel.runtime.onEvent((e) => void seen.push(e));
    const a = await run(kernel, 'one');
    const outcome = await kernel.runtime.compact(a.conversationId);
    expect(outcome).toMatchObject({ status: 'compacted', checkpoint: { trigger: 'manual', summary: 'MANUAL', coveredMessageCount: 2 } });
    expect(asked.at(-1)!.force).toBe(true);
    const events = seen.filter((e) => e.type === 'compaction');
    expect(events.map((e) => (e.type === 'compaction' ? e.payload.phase : ''))).toEqual(['start', 'end']);
    // seq keeps rising across runs and compactions
    expect(events[0]!.seq).toBeGreaterThan(a.events.at(-1)!.seq);

    const hung = kernel.runtime.startRun({ conversationId: a.conversationId, input: text('two'), mode: 'text' });
    await expect(kernel.runtime.compact(a.conversationId)).rejects.toThrow(/has a run in progress/);
    hung.abort();
    await hung.result;
    expect(provider.requests[1]!.messages.map(textOf)).toEqual(['two']);
    expect(systemText(provider.requests[1]!)).toContain('MANUAL');
    await expect(kernel.runtime.compact('c_unknown')).rejects.toThrow(/unknown conversation/);
  });
});

describe('runtime.complete', () => {
  it('returns the whole reply, retrying before output, and names bad options', async () => {
    const { kernel, provider } = await boot([{ error: { message: 'busy', retryable: true, code: 'overloaded' } }, { text: ['Sum', 'mary'] }], [], { runtime: { retryBaseDelayMs: 1 } });
    const r = await kernel.runtime.complete({ provider: 'fake', messages: [{ id: 'm1', role: 'user', content: text('summarize'), createdAt: 1 }], system: [{ id: 's', text: 'You summarize.' }] });
    expect(r.text).toBe('Summary');
    expect(r.usage).toEqual({ inputTokens: 10, outputTokens: 5 });
    expect(provider.requests).toHaveLength(2);
    expect(provider.requests[1]!.tools).toEqual([]);
    await expect(kernel.runtime.complete({ provider: 'nope', messages: [{ id: 'm1', role: 'user', content: text('x'), createdAt: 1 }] })).rejects.toThrow(/unknown provider "nope"/);
    await expect(kernel.runtime.complete({ provider: 'fake', messages: [] })).rejects.toThrow(/options\.messages: must hold at least one message/);
  });

  it('rejects with the provider error code when it cannot be retried', async () => {
    const { kernel } = await boot([{ error: { message: 'no', code: 'auth', status: 401 } }], []);
    await expect(kernel.runtime.complete({ provider: 'fake', messages: [{ id: 'm1', role: 'user', content: text('x'), createdAt: 1 }] })).rejects.toMatchObject({ code: 'provider', details: { code: 'auth' } });
  });
});

/**
 * Compaction through the gateway: `chat_queue.compact_now`, the `compaction` / `context` events
 * reaching subscribers (a manual compaction runs outside any run), snapshots carrying the
 * checkpoints at their place, refusals, and providers.list with the catalog's facts. A small
 * test-only tap stands in for the compaction plugin.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Message, Plugin } from '../../plugin-api.js';
import type { CheckpointView, ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import modelCatalog from '../../plugins/model-catalog/index.js';
import { TestClient, coveredSeqs, boot, cleanup, contiguous, gate, sendTo, text, type StreamMessage } from './gateway-harness.js';

afterEach(cleanup);

type Snapshot = Extract<ServerMessage, { type: 'snapshot' }>;
type Outcome = { status: string; conversationId: string; checkpoint?: { trigger: string; firstKeptMessageId?: string; summary: string }; reason?: string };

interface TapControl {
  mode: 'compact' | 'skip' | 'fail' | 'keep-nothing';
  /** Holds the "summary request" until resolved (or the compaction is aborted). */
  hold?: Promise<void>;
  held?: () => void;
}

const SUMMARY = '## Summary\n\nThe user asked **two** questions.';

/** Answers a budget before each request and a checkpoint (keeping the last user turn) when asked to compact manually. */
function compactionTap(control: TapControl): Plugin {
  return {
    name: 'test-compaction',
    apply(ctx) {
      ctx.sessionHooks.compaction.tap(async (req) => {
        if (req.trigger === 'pre-send' || req.trigger === 'post-tool') return { budget: { usedTokens: 1000 + req.messages.length, contextWindow: 50_000, thresholdTokens: 40_000 } };
        if (req.trigger !== 'manual' || control.mode === 'skip') return undefined;
        req.begin();
        if (control.hold) {
          control.held?.();
          await Promise.race([control.hold, new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(new Error('the summary request was stopped')), { once: true }))]);
        }
        if (control.mode === 'fail') return { failed: 'the summary model refused' };
        const lastUser = req.messages.map((m) => m.role).lastIndexOf('user');
        const keep = control.mode === 'keep-nothing' ? undefined : req.messages[lastUser]?.id;
        return {
          checkpoint: {
            kind: 'summary',
            summary: SUMMARY,
            ...(keep ? { firstKeptMessageId: keep } : {}),
            coveredMessageCount: keep ? lastUser : req.messages.length,
            prunedToolCallIds: [],
            ledger: { read: [], modified: [] },
            provider: 'fake',
            model: 'fake-1',
            tokensBefore: 1234,
            tokensAfter: 321,
          },
        };
      });
    },
  };
}

async function twoTurns(a: TestClient): Promise<{ conversationId: string; lastSeq: number }> {
  const { conversationId } = await a.ok<{ conversationId: string }>(text('first question'));
  const d1 = await a.terminal(conversationId);
  await a.ok(sendTo(conversationId, 'second question'));
  const d2 = await a.terminal(conversationId, d1.seq);
  return { conversationId, lastSeq: d2.seq };
}

const compactNow = (conversationId?: string) => ({ type: 'chat_queue', item: { action: 'compact_now', ...(conversationId ? { conversationId } : {}) } });
const compactionEvents = (c: TestClient, id: string) => c.stream(id).filter((m) => m.event.type === 'compaction');
const phaseOf = (m: StreamMessage) => (m.event as { payload?: { phase?: unknown } }).payload?.phase;

describe('gateway compaction', () => {
  it('compact_now compacts: subscribers see start and end, snapshots place the checkpoint before the first kept message', async () => {
    const b = await boot({ steps: [{ text: 'answer one' }, { text: 'answer two' }, { text: 'answer three' }], extra: [historySqlite, compactionTap({ mode: 'compact' })] });
    const a = await TestClient.connect(b);
    const { conversationId, lastSeq } = await twoTurns(a);
    // Each request's budget reaches the subscribers as a `context` event.
    const context = a.stream(conversationId).filter((m) => m.event.type === 'context');
    expect(context.length).toBe(2);
    expect((context[0]!.event as { payload: object }).payload).toMatchObject({ round: 1, contextWindow: 50_000, thresholdTokens: 40_000 });

    const watcher = await TestClient.connect(b);
    await watcher.ok({ type: 'subscribe', conversationId });
    const outcome = await a.ok<Outcome>(compactNow(conversationId));
    expect(outcome).toMatchObject({ status: 'compacted', conversationId, checkpoint: { trigger: 'manual', summary: SUMMARY } });

    const load = await TestClient.connect(b);
    await load.ok({ type: 'conversations.load', conversationId });
    const snap = await load.waitFor<Snapshot>((m) => m.type === 'snapshot');
    const userIds = snap.messages.filter((m) => m.role === 'user').map((m) => m.id);
    expect(outcome.checkpoint?.firstKeptMessageId).toBe(userIds[1]);

    for (const c of [a, watcher]) {
      const events = compactionEvents(c, conversationId);
      expect(events.map(phaseOf)).toEqual(['start', 'end']);
      expect(events.every((m) => m.type === 'event')).toBe(true);
      expect(events[0]!.seq).toBe(lastSeq + 1);
      expect((events[1]!.event as { payload: object }).payload).toMatchObject({ phase: 'end', trigger: 'manual', kind: 'summary', tokensBefore: 1234, tokensAfter: 321, coveredMessageCount: 2, summary: SUMMARY, provider: 'fake', model: 'fake-1', firstKeptMessageId: userIds[1] });
    }
    // A compaction is no run: nothing says the conversation is running.
    expect(a.stream(conversationId).filter((m) => m.event.type === 'agent_start').length).toBe(2);

    expect(snap.running).toBe(false);
    expect(snap.compacting).toBeUndefined();
    expect(snap.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(snap.checkpoints).toEqual([
      expect.objectContaining<Partial<CheckpointView>>({ beforeMessageId: userIds[1], kind: 'summary', trigger: 'manual', summary: SUMMARY, coveredMessageCount: 2, provider: 'fake', model: 'fake-1', tokensBefore: 1234, tokensAfter: 321 }),
    ]);
    expect(typeof snap.checkpoints[0]!.segmentId).toBe('string');
    expect(snap.checkpoints[0]!.createdAt).toBeGreaterThan(0);
    // The latest estimate is the compaction's, in the window the last context event gave.
    expect(snap.context).toMatchObject({ usedTokens: 321, contextWindow: 50_000 });
    expect(snap.lastSeq).toBe(lastSeq + 2);

    const list = await a.ok<{ items: Array<{ id: string; running: boolean }> }>({ type: 'conversations.list' });
    expect(list.items.find((i) => i.id === conversationId)?.running).toBe(false);

    // The replay window holds the compaction's events like any others.
    const late = await TestClient.connect(b);
    const sub = await late.ok<{ mode: string; replayed: number }>({ type: 'subscribe', conversationId, lastSeq });
    expect(sub).toMatchObject({ mode: 'replay', replayed: 2 });
    expect(compactionEvents(late, conversationId).map(phaseOf)).toEqual(['start', 'end']);

    // The conversation goes on after it; the card stays where it was.
    await a.ok(sendTo(conversationId, 'third question'));
    await a.terminal(conversationId, lastSeq + 2);
    // Rising across the compaction and the run after it. (Contiguous too, once history-sqlite
    // gives back the seq block runtime.compact's loadHistory reserves: it has no turnEnd.)
    const seqs = coveredSeqs(a.stream(conversationId));
    expect(seqs.every((q, i) => i === 0 || q > seqs[i - 1]!)).toBe(true);
    expect(contiguous(seqs.slice(0, seqs.indexOf(lastSeq + 2) + 1))).toBe(true);
    // A client that saw the compaction catches up on the run after it by replay.
    const behind = await TestClient.connect(b);
    expect(await behind.ok<{ mode: string; replayed: number }>({ type: 'subscribe', conversationId, lastSeq: lastSeq + 2 })).toMatchObject({ mode: 'replay', replayed: seqs.length - seqs.indexOf(lastSeq + 2) - 1 });
    expect(coveredSeqs(behind.stream(conversationId))).toEqual(seqs.slice(seqs.indexOf(lastSeq + 2) + 1));
    // And one that stopped in the middle of that run gets exactly the rest.
    const mid = await TestClient.connect(b);
    const at = seqs.indexOf(lastSeq + 2) + 3;
    expect(await mid.ok<{ mode: string }>({ type: 'subscribe', conversationId, lastSeq: seqs[at] })).toMatchObject({ mode: 'replay' });
    expect(coveredSeqs(mid.stream(conversationId))).toEqual(seqs.slice(at + 1));
    expect(b.provider.requests.at(-1)!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    await load.ok({ type: 'conversations.load', conversationId });
    const after = await load.waitFor<Snapshot>((m) => m.type === 'snapshot' && m.messages.length === 6);
    expect(after.checkpoints.map((c) => c.beforeMessageId)).toEqual([userIds[1]]);
  });

  it('a checkpoint that kept nothing sits before the next message, in SQLite and in memory alike', async () => {
    for (const extra of [[historySqlite], []]) {
      const b = await boot({ steps: [{ text: 'answer one' }, { text: 'answer two' }, { text: 'answer three' }], extra: [...extra, compactionTap({ mode: 'keep-nothing' })] });
      const a = await TestClient.connect(b);
      const { conversationId, lastSeq } = await twoTurns(a);
      expect((await a.ok<Outcome>(compactNow(conversationId))).status).toBe('compacted');
      await a.ok({ type: 'conversations.load', conversationId });
      const snap = await a.waitFor<Snapshot>((m) => m.type === 'snapshot');
      expect(snap.checkpoints.length).toBe(1);
      expect(snap.checkpoints[0]!.beforeMessageId).toBeUndefined();
      expect(snap.checkpoints[0]!.coveredMessageCount).toBe(4);
      await a.ok(sendTo(conversationId, 'third question'));
      await a.terminal(conversationId, lastSeq + 2);
      await a.ok({ type: 'conversations.load', conversationId });
      const after = await a.waitFor<Snapshot>((m) => m.type === 'snapshot' && m.messages.length === 6);
      expect(after.checkpoints.map((c) => c.beforeMessageId)).toEqual([after.messages[4]!.id]);
      expect((after.messages[4] as Message).role).toBe('user');
      await cleanup();
    }
  });

  it('compact_now is refused while a run is active, for an unknown conversation, and without a conversationId', async () => {
    const g = gate(1);
    const b = await boot({ steps: [{ text: 'answer one' }, { text: 'held answer' }], gates: [g], extra: [historySqlite, compactionTap({ mode: 'compact' })] });
    const a = await TestClient.connect(b);
    const { conversationId } = await a.ok<{ conversationId: string }>(text('first question'));
    const d1 = await a.terminal(conversationId);
    await a.ok(sendTo(conversationId, 'second question'));
    await g.reached;

    const busy = await a.request(compactNow(conversationId));
    expect(busy.ok).toBe(false);
    expect(!busy.ok && busy.error.code).toBe('conflict');
    expect(!busy.ok && busy.error.message).toMatch(/run in progress/);

    const missing = await a.request(compactNow());
    expect(!missing.ok && missing.error).toEqual({ code: 'bad_request', message: expect.stringMatching(/^item\.conversationId: /) });
    const unknown = await a.request(compactNow('c_nope'));
    expect(!unknown.ok && unknown.error).toEqual({ code: 'not_found', message: 'unknown conversation "c_nope"' });

    g.release();
    await a.terminal(conversationId, d1.seq);
    expect(compactionEvents(a, conversationId)).toEqual([]);
    expect((await a.ok<Outcome>(compactNow(conversationId))).status).toBe('compacted');
  });

  it('skipped and failed outcomes; a compaction in progress shows in snapshots, queues sends and stops on stop', async () => {
    const control: TapControl = { mode: 'skip' };
    const b = await boot({ steps: [{ text: 'answer one' }, { text: 'answer two' }, { text: 'answer three' }], extra: [historySqlite, compactionTap(control)] });
    const a = await TestClient.connect(b);
    const { conversationId, lastSeq } = await twoTurns(a);

    const skipped = await a.ok<Outcome>(compactNow(conversationId));
    expect(skipped).toEqual({ status: 'skipped', conversationId, reason: expect.any(String) });
    expect(compactionEvents(a, conversationId)).toEqual([]);

    control.mode = 'fail';
    const failed = await a.ok<Outcome>(compactNow(conversationId));
    expect(failed).toEqual({ status: 'failed', conversationId, reason: 'the summary model refused' });
    const errorEvent = compactionEvents(a, conversationId).at(-1)!;
    expect((errorEvent.event as { payload: object }).payload).toMatchObject({ phase: 'error', trigger: 'manual', error: 'the summary model refused' });

    // Held: other clients see it in progress, a second request is refused, a send waits in the queue.
    control.mode = 'compact';
    let release!: () => void;
    control.hold = new Promise<void>((r) => (release = r));
    const held = new Promise<void>((r) => (control.held = r));
    const pending = a.request(compactNow(conversationId), 10_000);
    await held;
    const other = await TestClient.connect(b);
    await other.ok({ type: 'subscribe', conversationId });
    const snap = await other.waitFor<Snapshot>((m) => m.type === 'snapshot');
    expect(snap.running).toBe(false);
    expect(snap.compacting?.type).toBe('compaction');
    const again = await other.request(compactNow(conversationId));
    expect(!again.ok && again.error.code).toBe('conflict');
    expect(!again.ok && again.error.message).toMatch(/already being compacted/);
    // The requester's later messages are not held up by its compaction.
    expect((await a.ok<{ items: unknown[] }>({ type: 'conversations.list' })).items.length).toBe(1);
    const queued = await other.ok<{ queued?: boolean }>(sendTo(conversationId, 'sent while compacting'));
    expect(queued.queued).toBe(true);
    const stopped = await other.ok<{ stopped: boolean }>({ type: 'chat_queue', item: { action: 'stop', conversationId } });
    expect(stopped.stopped).toBe(true);
    const reply = await pending;
    expect(reply.ok && reply.data).toMatchObject({ status: 'failed', reason: expect.stringMatching(/stopped/) });
    release();
    // The queued message starts once the compaction is over, and runs on the unchanged history.
    const done = await other.terminal(conversationId, lastSeq);
    expect(done.type).toBe('done');
    expect(b.provider.requests.at(-1)!.messages.length).toBe(5);
    await other.ok({ type: 'conversations.load', conversationId });
    const final = await other.waitFor<Snapshot>((m) => m.type === 'snapshot' && m.messages.length === 6);
    expect(final.checkpoints).toEqual([]);
    expect(final.compacting).toBeUndefined();
  });

  it('providers.list models carry the catalog context window and price when it knows them', async () => {
    const rich: Plugin = {
      name: 'test-rich-provider',
      apply(ctx) {
        ctx.registerProvider({
          id: 'rich',
          displayName: 'Rich',
          defaultModel: 'big',
          models: [{ id: 'big', name: 'Big', contextWindow: 400_000, price: { input: 2, output: 8 } }, { id: 'bare' }],
          isConfigured: () => true,
          async *stream() {
            yield { type: 'done', stopReason: 'end' };
          },
        });
      },
    };
    const b = await boot({ extra: [modelCatalog, rich], settings: { customProviders: [] } });
    const a = await TestClient.connect(b);
    const { providers } = await a.ok<{ providers: Array<{ id: string; models: Array<Record<string, unknown>> }> }>({ type: 'providers.list' });
    expect(providers.find((p) => p.id === 'rich')!.models).toEqual([
      { id: 'big', name: 'Big', contextWindow: 400_000, price: { input: 2, output: 8 } },
      { id: 'bare' },
    ]);
    expect(providers.find((p) => p.id === 'fake')!.models).toEqual([]);
  });
});

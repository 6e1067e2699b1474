/**
 * Issue 19 part 2, the load test: two `serve` processes on one PostgreSQL, CONVS conversations
 * (half created through each process, so both own some), each run streaming DELTAS text deltas
 * from the Anthropic wire mock, CLIENTS WebSocket clients spread over both processes, every one
 * subscribed to every conversation. Each client must see, per conversation, the run's seqs
 * without a gap or a repeat (a coalesced message stands for several), the text the mock sent
 * and one `done`; one more client moves to the other process mid-run and replays from its last
 * seq of every conversation. Meanwhile both processes report every conversation running, and
 * neither once the runs ended.
 *
 * Sizes: H19_LOAD_CONVS (10), H19_LOAD_DELTAS (2000), H19_LOAD_CLIENTS (10), H19_LOAD_DELAY_MS
 * (1: between two SSE events of a stream). Skipped with one line without PostgreSQL.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicTextStream, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { startServe, teamHome, TeamClient, type Msg, type ServeProcess } from '../fixtures/team-servers.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const CONVS = Number(process.env.H19_LOAD_CONVS ?? 10);
const DELTAS = Number(process.env.H19_LOAD_DELTAS ?? 2000);
const CLIENTS = Number(process.env.H19_LOAD_CLIENTS ?? 10);
const DELAY_MS = Number(process.env.H19_LOAD_DELAY_MS ?? 1);
const WAIT_MS = Number(process.env.H19_WAIT_MS ?? 45_000);

const piece = (k: number) => (i: number) => `c${k}.${i} `;
const expectedText = (k: number) => Array.from({ length: DELTAS }, (_, i) => piece(k)(i)).join('');

/** The seqs a client was handed (a coalesced message stands for several). */
function seqsOf(events: Msg[]): number[] {
  const out: number[] = [];
  for (const m of events) for (let s = m.seq - (m.coalesced ?? 1) + 1; s <= m.seq; s++) out.push(s);
  return out;
}

const textOf = (events: Msg[]) => events.filter((m) => m.type === 'token').map((m) => m.event.delta.text as string).join('');
const runEvents = (c: TeamClient, conversationId: string, runId: string) => c.events(conversationId).filter((m) => m.event.runId === runId);
const ended = (c: TeamClient, conversationId: string, runId: string) => runEvents(c, conversationId, runId).some((m) => m.event.type === 'agent_end');

/** What is wrong with what a client was handed of one run ('' when nothing). */
function problems(events: Msg[], k: number, from?: number): string {
  const seqs = seqsOf(events);
  const out: string[] = [];
  for (let i = 1; i < seqs.length; i++) {
    if (seqs[i]! !== seqs[i - 1]! + 1) {
      out.push(`seq ${seqs[i - 1]} then ${seqs[i]}`);
      break;
    }
  }
  if (from !== undefined && seqs[0] !== from) out.push(`starts at ${seqs[0]}, not ${from}`);
  const text = textOf(events);
  if (text !== expectedText(k)) out.push(`text of ${text.length} chars, expected ${expectedText(k).length}`);
  const dones = events.filter((m) => m.event.type === 'agent_end');
  if (dones.length !== 1 || dones[0]!.type !== 'done') out.push(`${dones.length} ends (${dones.map((d) => d.type).join(',')})`);
  return out.join('; ');
}

describe.skipIf(postgresSkip)(`team server under load: ${CONVS} conversations x ${DELTAS} deltas x ${CLIENTS} clients on two processes`, () => {
  const pg = usePostgres();
  let mock: MockAnthropicServer;
  const procs: ServeProcess[] = [];
  const clients: TeamClient[] = [];
  const homes: string[] = [];

  beforeAll(async () => {
    if (postgresSkip) return;
    const url = await pg.cluster().createDatabase();
    mock = await startMockAnthropic({
      script: (req) => {
        const said = JSON.stringify(req.body?.messages?.at(-1) ?? '');
        const load = /load-(\d+)/.exec(said);
        if (load) return { kind: 'sse', events: anthropicTextStream(DELTAS, { piece: piece(Number(load[1])) }), delayMs: DELAY_MS };
        return { kind: 'sse', events: anthropicTextStream(3) };
      },
    });
    const env = { LIVEAGENT_DATABASE_URL: url, ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url };
    // Long leases: a send through the other process is forwarded to the owner, not taken over.
    const settings = { title: { enabled: false }, team: { leaseMs: 20_000, pollMs: 500, batchDelayMs: 15, forwardTimeoutMs: 20_000 } };
    for (let i = 0; i < 2; i++) homes.push(teamHome(settings));
    procs.push(...(await Promise.all(homes.map((h) => startServe(h, env)))));
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    if (process.env.H19B_DUMP) for (const [i, p] of procs.entries()) fs.writeFileSync(`/tmp/h19-load-proc${i}.log`, p.stderr());
    await Promise.all(procs.map((p) => p.stop()));
    await mock?.close();
    for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
  }, 60_000);

  const connect = async (p: ServeProcess) => {
    const c = await TeamClient.connect(p);
    clients.push(c);
    return c;
  };

  it('every client sees every run whole, in order, once; a client moving mid-run replays without loss; running is the same on both processes', async () => {
    const [A, B] = procs as [ServeProcess, ServeProcess];
    const on = (i: number) => (i % 2 === 0 ? A : B);

    // The conversations, created half through each process (their owner).
    const makers = [await connect(A), await connect(B)];
    const ids: string[] = [];
    for (let k = 0; k < CONVS; k++) {
      const sent = await makers[k % 2]!.request({ type: 'chat_queue', item: { action: 'send', clientRequestId: `warm${k}`, text: `warm-${k}` } });
      expect(sent.ok, JSON.stringify(sent)).toBe(true);
      ids.push(sent.data.conversationId);
    }
    for (let k = 0; k < CONVS; k++) await makers[k % 2]!.until((all) => all.some((m) => m.type === 'done' && m.conversationId === ids[k]), WAIT_MS, `the first run of conversation ${k}`);

    // Subscribed everywhere before the runs (a process learns of a conversation from its log).
    const subscribeAll = async (c: TeamClient) => {
      for (const id of ids) {
        const sub = await c.subscribeWhenKnown(id, 41);
        expect(sub.ok, JSON.stringify(sub)).toBe(true);
      }
    };
    const watchers = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => connect(on(i))));
    const mover = await connect(A);
    await Promise.all([...watchers, mover].map(subscribeAll));

    // Every run; half of them sent through the process that does not own the conversation (forwarded).
    const runIds = await Promise.all(
      ids.map(async (id, k) => {
        const sender = makers[(k % 2) ^ (Math.floor(k / 2) % 2)]!;
        const sent = await sender.request({ type: 'chat_queue', item: { action: 'send', conversationId: id, clientRequestId: `load${k}`, text: `load-${k}` } });
        expect(sent.ok, JSON.stringify(sent)).toBe(true);
        return sent.data.runId as string;
      }),
    );

    // Mid-run: both processes list every conversation as running.
    await mover.until((all) => ids.every((id, k) => all.some((m) => m.type === 'token' && m.event.runId === runIds[k])), WAIT_MS, 'a token of every run on the mover');
    const running = async (c: TeamClient) => {
      const r = await c.request({ type: 'conversations.list' });
      return new Map((r.data.items as Msg[]).map((i) => [i.id as string, !!i.running]));
    };
    const [onA, onB] = [await running(makers[0]!), await running(makers[1]!)];
    // Those whose end had not reached the mover even after both lists were read were running throughout.
    const going = ids.filter((id, k) => !ended(mover, id, runIds[k]!));
    expect(going.length, 'runs still going when the lists were read').toBeGreaterThan(0);
    for (const id of going) {
      expect(onA.get(id), `running on A: ${id}`).toBe(true);
      expect(onB.get(id), `running on B: ${id}`).toBe(true);
    }

    // The mover leaves A for B, and replays every conversation from the last seq it was handed.
    mover.close();
    const before = ids.map((id, k) => runEvents(mover, id, runIds[k]!));
    const moved = await connect(B);
    for (const [k, id] of ids.entries()) {
      const lastSeq = Math.max(...mover.events(id).map((m) => m.seq as number), ...mover.messages.filter((m) => m.type === 'snapshot' && m.conversationId === id).map((m) => m.lastSeq as number));
      const sub = await moved.request({ type: 'subscribe', conversationId: id, lastSeq });
      expect(sub.ok, JSON.stringify(sub)).toBe(true);
      expect(sub.data.mode, `conversation ${k}: ${JSON.stringify(sub.data)}`).toBe('replay');
    }

    for (const c of [...watchers, moved]) for (const [k, id] of ids.entries()) await c.until(() => ended(c, id, runIds[k]!), WAIT_MS, `the end of run ${k}`);

    const bad: string[] = [];
    watchers.forEach((c, i) =>
      ids.forEach((id, k) => {
        const p = problems(runEvents(c, id, runIds[k]!), k);
        if (p) bad.push(`client ${i} (${on(i) === A ? 'A' : 'B'}), conversation ${k}: ${p}`);
      }),
    );
    ids.forEach((id, k) => {
      const start = runEvents(mover, id, runIds[k]!).find((m) => m.event.type === 'agent_start') ?? runEvents(moved, id, runIds[k]!).find((m) => m.event.type === 'agent_start');
      const p = problems([...before[k]!, ...runEvents(moved, id, runIds[k]!)], k, start?.seq);
      if (p) bad.push(`the moving client, conversation ${k}: ${p}`);
    });
    expect(bad).toEqual([]);

    // Both processes: nothing running once every run ended (the lists are read again, not cached).
    for (const c of makers) {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const r = await running(c);
        const still = ids.filter((id) => r.get(id));
        if (!still.length) break;
        if (Date.now() > deadline) expect(still, 'still listed as running').toEqual([]);
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  }, 120_000);

  it('a process that does not own a conversation shows its run and its queue as the owner does, and both cleared after', async () => {
    const [A, B] = procs as [ServeProcess, ServeProcess];
    const [onA, onB] = [await connect(A), await connect(B)];
    // A conversation A owns (A's lease outlives the run by leaseMs: B's sends are forwarded).
    const made = await onA.request({ type: 'chat_queue', item: { action: 'send', clientRequestId: 'q-warm', text: 'warm-q' } });
    const id = made.data.conversationId as string;
    await onA.until((all) => all.some((m) => m.type === 'done' && m.conversationId === id), WAIT_MS, 'the first run');
    const sub = await onB.subscribeWhenKnown(id, 41);
    expect(sub.ok, JSON.stringify(sub)).toBe(true);

    const first = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId: id, clientRequestId: 'q1', text: 'load-1' } });
    expect(first.ok, JSON.stringify(first)).toBe(true);
    const run1 = first.data.runId as string;
    await onB.until((all) => all.some((m) => m.type === 'token' && m.event.runId === run1), WAIT_MS, 'the run streaming on B');
    const second = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId: id, clientRequestId: 'q2', text: 'load-2' } });
    expect(second.ok, JSON.stringify(second)).toBe(true);
    expect(second.data.queued, JSON.stringify(second.data)).toBe(true);
    const itemId = second.data.itemId as string;
    const queued = (c: TeamClient) => c.messages.filter((m) => m.type === 'queue' && m.conversationId === id);
    // A subscriber on B hears the owner's queue change, after the events before it.
    await onB.until((all) => queued(onB).some((q) => q.items.some((i: Msg) => i.itemId === itemId)), WAIT_MS, 'the queue on B');
    expect(ended(onB, id, run1), 'the queue notice came while the run went on').toBe(false);

    // A client arriving on B now: running, the queue, as on A.
    const late = await connect(B);
    const lateSub = await late.request({ type: 'subscribe', conversationId: id });
    expect(lateSub.ok, JSON.stringify(lateSub)).toBe(true);
    const snap = late.messages.find((m) => m.type === 'snapshot' && m.conversationId === id)!;
    const lateQueue = await late.until((all) => all.find((m) => m.type === 'queue' && m.conversationId === id), WAIT_MS, 'the queue on subscribing');
    const list = async (c: TeamClient) => ((await c.request({ type: 'conversations.list' })).data.items as Msg[]).find((i) => i.id === id);
    const [listA, listB] = [await list(onA), await list(onB)];
    if (!ended(onB, id, run1)) {
      expect(snap.running).toBe(true);
      expect(snap.conversation.running).toBe(true);
      expect(lateQueue.items.map((i: Msg) => i.itemId)).toEqual([itemId]);
      expect(listA?.running).toBe(true);
      expect(listB?.running).toBe(true);
    }

    // The queued message runs after the first run (on A); B sees the queue emptied, then the run.
    await onB.until((all) => all.some((m) => m.event?.type === 'agent_start' && m.event.runId !== run1 && m.conversationId === id), WAIT_MS, 'the queued message running');
    const emptied = queued(onB).findIndex((q) => q.items.length === 0);
    expect(emptied, 'the queue emptied on B').toBeGreaterThanOrEqual(0);
    const run2Start = onB.messages.findIndex((m) => m.event?.type === 'agent_start' && m.event.runId !== run1 && m.conversationId === id);
    expect(onB.messages.indexOf(queued(onB)[emptied]!)).toBeLessThan(run2Start);
    const run2 = onB.messages[run2Start]!.event.runId as string;
    await onB.until(() => ended(onB, id, run2), WAIT_MS, 'the queued run done on B');
    expect(problems(runEvents(onB, id, run1), 1)).toBe('');
    expect(problems(runEvents(onB, id, run2), 2)).toBe('');
    for (const c of [onA, onB]) {
      const deadline = Date.now() + WAIT_MS;
      while ((await list(c))?.running) {
        if (Date.now() > deadline) throw new Error('still listed as running');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const again = await connect(B);
    await again.request({ type: 'subscribe', conversationId: id });
    const quiet = await again.until((all) => all.find((m) => m.type === 'queue' && m.conversationId === id), WAIT_MS, 'the queue after');
    expect(quiet.items).toEqual([]);
    expect(again.messages.find((m) => m.type === 'snapshot')!.running).toBe(false);
  }, 90_000);
});

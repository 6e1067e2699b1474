/**
 * Issue 19 part 2: several `serve` processes on one PostgreSQL (plugins/team-fanout). Real
 * processes, real WebSocket clients, a wire mock of the Anthropic API streaming slowly enough
 * for a run to be watched, killed and resumed elsewhere. Skipped with one line without PostgreSQL.
 */
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicTextStream, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { startServe, teamHome, TeamClient, type Msg, type ServeProcess } from '../fixtures/team-servers.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';
import fs from 'node:fs';
import { openTeamDatabase } from '../../plugins/team-fanout/database.js';
import { EventLog } from '../../plugins/team-fanout/event-log.js';

const LEASE_MS = 1500;
const DELTAS = 60;
/** How long a step waits for what it expects (a failure then says what it got). */
const WAIT_MS = Number(process.env.H19_WAIT_MS ?? 30_000);

/** The seqs a client was handed for a conversation (a coalesced message stands for several). */
function seqsOf(events: Msg[]): number[] {
  const out: number[] = [];
  for (const m of events) for (let s = m.seq - (m.coalesced ?? 1) + 1; s <= m.seq; s++) out.push(s);
  return out;
}

function strictlyRising(seqs: number[]): boolean {
  return seqs.every((s, i) => i === 0 || s > seqs[i - 1]!);
}

const doneOf = (c: TeamClient, conversationId: string, runId?: string) => c.events(conversationId).filter((m) => m.event.type === 'agent_end' && (!runId || m.event.runId === runId));

describe.skipIf(postgresSkip)('team server: several serve processes on one PostgreSQL', () => {
  const pg = usePostgres();
  let mock: MockAnthropicServer;
  let url: string;
  let db: Knex;
  const procs: ServeProcess[] = [];
  const clients: TeamClient[] = [];
  const homes: string[] = [];
  let env: Record<string, string>;

  const serve = async () => {
    const home = teamHome({ team: { leaseMs: LEASE_MS, pollMs: 300, batchDelayMs: 10, forwardTimeoutMs: 10_000, replayWaitMs: 2000 } });
    homes.push(home);
    const p = await startServe(home, env);
    procs.push(p);
    return p;
  };
  const client = async (p: ServeProcess) => {
    const c = await TeamClient.connect(p);
    clients.push(c);
    return c;
  };
  const origins = async (conversationId: string, runId: string) =>
    (await db('team_events').distinct('origin').where({ conversation_id: conversationId }).andWhereRaw("event::jsonb->>'runId' = ?", [runId])).map((r: { origin: string }) => r.origin);

  beforeAll(async () => {
    if (postgresSkip) return;
    url = await pg.cluster().createDatabase();
    mock = await startMockAnthropic({ script: () => ({ kind: 'sse', events: anthropicTextStream(DELTAS), delayMs: 25 }) });
    env = { LIVEAGENT_DATABASE_URL: url, ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url };
    const { default: createKnex } = await import('knex');
    db = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    if (process.env.H19B_DUMP) for (const [i, p] of procs.entries()) fs.writeFileSync(`/tmp/h19b-proc${i}.log`, p.stderr());
    await Promise.all(procs.map((p) => p.stop()));
    await db?.destroy();
    await mock?.close();
    for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
  }, 60_000);

  let conversationId: string;
  let originA: string;
  let A: ServeProcess;
  let B: ServeProcess;
  let C: ServeProcess;

  it('a client on B sees, live, a run started through A: seq rising, one done (and one on A)', async () => {
    [A, B] = [await serve(), await serve()];
    const [onA, onB] = [await client(A), await client(B)];
    const sent = await onA.request({ type: 'chat_queue', item: { action: 'send', clientRequestId: 'c1', text: 'hello' } });
    expect(sent.ok, JSON.stringify(sent)).toBe(true);
    conversationId = sent.data.conversationId;
    const runId = sent.data.runId;
    // B learns of the conversation once A logged or stored something of it (a client finds it in
    // the conversation list); until then B does not know it.
    const sub = await onB.subscribeWhenKnown(conversationId, 21);
    expect(sub.ok, JSON.stringify(sub)).toBe(true);
    await onB.until((all) => all.some((m) => m.type === 'done' && m.conversationId === conversationId), WAIT_MS, 'done on B');
    await onA.until((all) => all.some((m) => m.type === 'done' && m.conversationId === conversationId), WAIT_MS, 'done on A');
    const live = onB.events(conversationId);
    // Live on B, not only a snapshot at the end: tokens arrived after the subscription.
    expect(live.filter((m) => m.type === 'token').length).toBeGreaterThan(0);
    expect(strictlyRising(seqsOf(live))).toBe(true);
    expect(doneOf(onB, conversationId)).toHaveLength(1);
    expect(doneOf(onA, conversationId)).toHaveLength(1);
    expect(doneOf(onB, conversationId)[0]!.event.runId).toBe(runId);
    const found = await origins(conversationId, runId);
    expect(found).toHaveLength(1);
    originA = found[0]!;
  }, 60_000);

  it('a send on B for the conversation A owns is forwarded and runs on A', async () => {
    const onB = await client(B);
    const first = (await db('team_events').where({ conversation_id: conversationId, type: 'agent_start' }).first()) as { origin: string };
    // A still holds the lease: right after its run (leaseMs after the last renewal).
    const sent = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId, clientRequestId: 'c2', text: 'again' } });
    expect(sent.ok, JSON.stringify(sent)).toBe(true);
    expect(sent.data.conversationId).toBe(conversationId);
    const runId = sent.data.runId as string;
    await onB.until((all) => all.some((m) => m.type === 'done' && m.event.runId === runId), WAIT_MS, 'the forwarded run done on B');
    expect(first.origin).toBe(originA);
    expect(await origins(conversationId, runId)).toEqual([originA]);
    expect(doneOf(onB, conversationId, runId)).toHaveLength(1);
    expect(strictlyRising(seqsOf(onB.events(conversationId)))).toBe(true);
  }, 60_000);

  it('kill -9 of the owner mid-run: its run ends once for B clients, the next send runs on B; a client moving to another process replays from its last seq', async () => {
    const onB = await client(B);
    const sent = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId, clientRequestId: 'c3', text: 'third' } });
    expect(sent.ok, JSON.stringify(sent)).toBe(true);
    const deadRun = sent.data.runId as string;
    const ownerA = ((await db('team_leases').where({ conversation_id: conversationId }).first()) as { owner: string }).owner;
    // Forwarded to A: A's lease from the run before had not lapsed yet.
    expect(ownerA).toBe(originA);
    await onB.until((all) => all.filter((m) => m.type === 'token' && m.event.runId === deadRun).length >= 5, WAIT_MS, 'some tokens of the run on A');
    A.child.kill('SIGKILL');
    await new Promise((r) => A.child.once('exit', r));
    expect(await origins(conversationId, deadRun)).toEqual([ownerA]);
    // A third process, for a client to move to mid-run below. Started now (while A's lease
    // lapses), not during that run: booting a process takes longer than a whole run streams.
    C = await serve();

    // The next send on B: A's lease lapses, B takes the conversation over.
    const next = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId, clientRequestId: 'c4', text: 'fourth' } }, WAIT_MS);
    expect(next.ok, JSON.stringify(next)).toBe(true);
    const runId = next.data.runId as string;
    // The dead run is closed for B's client exactly once, as an error.
    // An agent_end with status error travels as `error` (protocol.ts), the run's one end.
    await onB.until((all) => all.some((m) => m.event?.type === 'agent_end' && m.event.runId === deadRun), WAIT_MS, 'the dead run closed');
    await onB.until((all) => all.some((m) => m.type === 'token' && m.event.runId === runId), WAIT_MS, 'the new run streaming');
    const orphan = doneOf(onB, conversationId, deadRun);
    expect(orphan).toHaveLength(1);
    expect(orphan[0]!.type).toBe('error');
    expect(orphan[0]!.event.status).toBe('error');
    expect(orphan[0]!.event.error.details).toEqual({ ownerLost: true });

    // A client leaves B mid-run for C.
    await onB.until((all) => all.filter((m) => m.type === 'token' && m.event.runId === runId).length >= 5, WAIT_MS, 'tokens of the run on B');
    onB.close();
    const before = seqsOf(onB.events(conversationId).filter((m) => m.event.runId === runId));
    expect(doneOf(onB, conversationId, runId), 'the client left B before the run ended').toHaveLength(0);
    const lastSeq = before[before.length - 1]!;
    const onC = await client(C);
    const sub = await onC.request({ type: 'subscribe', conversationId, lastSeq });
    expect(sub.ok, JSON.stringify(sub)).toBe(true);
    expect(sub.data.mode).toBe('replay');
    await onC.until((all) => all.some((m) => m.type === 'done' && m.event.runId === runId), WAIT_MS, 'done on C');
    const after = seqsOf(onC.events(conversationId));
    expect(after[0]).toBe(lastSeq + 1);
    // No gap (a run's seqs are consecutive), no duplicate, one done.
    const all = [...before, ...after];
    expect(all.every((s, i) => i === 0 || s === all[i - 1]! + 1)).toBe(true);
    expect(doneOf(onC, conversationId, runId)).toHaveLength(1);
    const ownerB = ((await db('team_leases').where({ conversation_id: conversationId }).first()) as { owner: string }).owner;
    expect(ownerB).not.toBe(ownerA);
    expect(await origins(conversationId, runId)).toEqual([ownerB]);
  }, 90_000);

  it('the owner dies mid-run and nobody sends again: the survivor closes the run and stops listing it as running', async () => {
    const onC = await client(C);
    const onB = await client(B);
    const sent = await onC.request({ type: 'chat_queue', item: { action: 'send', clientRequestId: 'd1', text: 'dies' } });
    expect(sent.ok, JSON.stringify(sent)).toBe(true);
    const id = sent.data.conversationId as string;
    const runId = sent.data.runId as string;
    const sub = await onB.subscribeWhenKnown(id, 41);
    expect(sub.ok, JSON.stringify(sub)).toBe(true);
    await onB.until((all) => all.filter((m) => m.type === 'token' && m.event.runId === runId).length >= 3, WAIT_MS, 'tokens on B');
    const listed = async () => ((await onB.request({ type: 'conversations.list' })).data.items as Msg[]).find((i) => i.id === id)?.running;
    expect(await listed(), 'running on B while C runs it').toBe(true);
    C.child.kill('SIGKILL');
    await new Promise((r) => C.child.once('exit', r));
    // C's lease lapses (leaseMs), B notices on two polls and closes the run once.
    await onB.until((all) => all.some((m) => m.event?.type === 'agent_end' && m.event.runId === runId), WAIT_MS, 'the dead run closed on B');
    const ends = doneOf(onB, id, runId);
    expect(ends).toHaveLength(1);
    expect(ends[0]!.event.error.details).toEqual({ ownerLost: true });
    const deadline = Date.now() + WAIT_MS;
    while (await listed()) {
      if (Date.now() > deadline) throw new Error('still listed as running on B');
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 60_000);

  it('a replay from a seq still in another writer\'s unflushed batch waits for it: every later event once, in order', async () => {
    const logger = { debug() {}, info() {}, warn() {}, error() {} } as never;
    const knex = await openTeamDatabase(url, { poolMax: 4, acquireTimeoutMs: 10_000 });
    const limits = (batchDelayMs: number) => () => ({ batchDelayMs, batchMaxRows: 100, maxBufferedEvents: 1000, replayMaxEvents: 1000, replayWaitMs: 5000 });
    const writer = new EventLog({ knex, self: 'w', logger, publish: () => undefined, limits: limits(400) });
    const published: number[] = [];
    const reader = new EventLog({ knex, self: 'r', logger, publish: (e) => published.push(e.seq), limits: limits(10) });
    const ev = (seq: number) => ({ type: seq === 1 ? 'agent_start' : 'turn_start', round: 1, conversationId: 'rw', runId: 'run', seq, ts: Date.now() }) as never;
    for (let seq = 1; seq <= 5; seq++) writer.append(ev(seq));
    await writer.flush();
    for (let seq = 6; seq <= 8; seq++) writer.append(ev(seq)); // written 400 ms later
    // The client saw 1..7 live on the writer's process and moves to the reader's.
    let handed: number[] | undefined;
    let publishedAtHandOver = -1;
    const ok = await reader.replay('rw', 7, (events) => {
      handed = events.map((e) => e.seq);
      publishedAtHandOver = published.length;
    });
    expect(ok).toBe(true);
    expect(handed).toEqual([8]);
    // Live from here on: only what comes after the hand-over reaches the client.
    writer.append(ev(9));
    await writer.flush();
    await reader.catchUp('rw');
    expect(published.slice(publishedAtHandOver)).toEqual([9]);
    await writer.close();
    await reader.close();
    await knex.destroy();
  });

  it('the events table is pruned: by age, and to the newest N of each conversation', async () => {
    const logger = { debug() {}, info() {}, warn() {}, error() {} } as never;
    const knex = await openTeamDatabase(url, { poolMax: 2, acquireTimeoutMs: 10_000 }); // creates the tables when this test runs alone
    const log = new EventLog({ knex, self: 'prunetest', logger, publish: () => undefined, limits: () => ({ batchDelayMs: 1, batchMaxRows: 100, maxBufferedEvents: 1000, replayMaxEvents: 1000, replayWaitMs: 1000 }) });
    const now = Date.now();
    for (let seq = 1; seq <= 30; seq++) log.append({ type: 'turn_start', round: 1, conversationId: 'p1', runId: 'r', seq, ts: seq <= 5 ? now - 10 * 3_600_000 : now } as never);
    for (let seq = 1; seq <= 3; seq++) log.append({ type: 'turn_start', round: 1, conversationId: 'p2', runId: 'r', seq, ts: now } as never);
    await log.flush();
    await log.prune(3_600_000, 10);
    const left = (await db('team_events').select('conversation_id', 'seq').whereIn('conversation_id', ['p1', 'p2']).orderBy(['conversation_id', 'seq'])) as Array<{ conversation_id: string; seq: number }>;
    expect(left.filter((r) => r.conversation_id === 'p1').map((r) => Number(r.seq))).toEqual(Array.from({ length: 10 }, (_, i) => 21 + i));
    expect(left.filter((r) => r.conversation_id === 'p2')).toHaveLength(3);
    await log.close();
    await knex.destroy();
  });
});

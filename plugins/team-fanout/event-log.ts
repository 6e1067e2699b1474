/**
 * The shared event log: every lifecycle event a process produces goes into `team_events`, keyed
 * by (conversation, seq), in batches (one multi-row INSERT per `batchDelayMs` or `batchMaxRows`,
 * never one per delta), and each batch rings a doorbell: one NOTIFY per conversation in it,
 * carrying only the conversation id, the highest seq and the writer (far under NOTIFY's 8 KB).
 * NOTIFY is not a queue (a reader reconnecting misses some), so readers always catch up from the
 * table by seq, per conversation, from the highest seq they have folded in (the cursor).
 *
 * Per conversation everything that touches the cursor runs one at a time (`serial`), so a replay
 * can hand its events over with nothing of that conversation published in between.
 *
 * Notices (a conversation's queue changed) ride in the same buffer, after the events logged
 * before them, and ring on their own channel in the same transaction: a reader folds in those
 * events before it passes the notice on, so its clients see them in the owner's order.
 *
 * The cursors are the only per-conversation state kept for good: at most
 * `maxTrackedConversations`, the least recently active dropped first (never one whose remote run
 * is open). A dropped one is found again from the table (its next doorbell names the batch's
 * first seq, so nothing newer than what was folded is skipped).
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { LifecycleEvent, Logger } from '../../plugin-api.js';

export const EVENTS_CHANNEL = 'liveagent_team_events';
export const NOTICES_CHANNEL = 'liveagent_team_notices';

export interface EventLogOptions {
  knex: Knex;
  /** This process (the `origin` of what it writes). */
  self: string;
  logger: Logger;
  /** Fold and fan out an event another process produced. */
  publish(e: LifecycleEvent): void;
  /** A notice another process logged (`message` undefined: too big for a doorbell, ask `origin`); after the events logged before it. */
  noticed?(conversationId: string, origin: string, message: Record<string, unknown> | undefined): Promise<void> | void;
  limits(): { batchDelayMs: number; batchMaxRows: number; maxBufferedEvents: number; replayMaxEvents: number; replayWaitMs: number; maxTrackedConversations?: number };
}

interface Row {
  conversationId: string;
  seq: number;
  type: string;
  origin: string;
  event: LifecycleEvent;
  /** A notice's doorbell payload (not an event: `seq` is the conversation's cursor when it was sent). */
  notice?: string;
}

interface Doorbell {
  c: string;
  /** The highest seq of the batch, and its lowest (older writers do not send it). */
  s: number;
  f?: number;
  o: string;
}

const NoticeBell = z.object({ c: z.string(), o: z.string(), s: z.number(), m: z.looseObject({ type: z.string() }).optional() });

const DEFAULT_MAX_TRACKED = 10_000;

const CATCH_UP_PAGE = 2000;
/** Conversations per poll query. */
const POLL_CHUNK = 1000;

export class EventLog {
  private buffer: Row[] = [];
  /** The batch being written: still counts as logged for a replay until it is committed. */
  private inflight: Row[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private readonly cursors = new Map<string, number>();
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Runs another process was streaming when last looked at, by conversation (a take-over closes them). */
  readonly openRemote = new Map<string, string>();
  private closed = false;
  private warnedFull = false;

  constructor(private readonly o: EventLogOptions) {}

  /** An event this process produced (runtime.onEvent): logged with the next batch. */
  append(e: LifecycleEvent, origin = this.o.self): void {
    if (this.closed) return;
    this.advance(e.conversationId, e.seq);
    if (origin === this.o.self) this.openRemote.delete(e.conversationId);
    const limits = this.o.limits();
    if (this.buffer.length >= limits.maxBufferedEvents) {
      // The database is unreachable for long: keep the newest, say so once.
      this.buffer.shift();
      if (!this.warnedFull) this.o.logger.warn(`the team event log is behind by ${limits.maxBufferedEvents} events: dropping the oldest (other processes will not see them live)`);
      this.warnedFull = true;
    }
    this.buffer.push({ conversationId: e.conversationId, seq: e.seq, type: e.type, origin, event: e });
    this.schedule();
  }

  /** A conversation notice of this process (a queue change): rings after the events logged before it. */
  notice(conversationId: string, message: Record<string, unknown>): void {
    if (this.closed) return;
    const s = this.cursors.get(conversationId) ?? 0;
    let payload = JSON.stringify({ c: conversationId, o: this.o.self, s, m: message });
    // NOTIFY payloads stop at 8000 bytes: a long queue is only announced (readers ask the owner).
    if (Buffer.byteLength(payload) >= 7900) payload = JSON.stringify({ c: conversationId, o: this.o.self, s });
    this.buffer.push({ conversationId, seq: s, type: 'notice', origin: this.o.self, event: undefined as never, notice: payload });
    this.schedule();
  }

  private schedule(): void {
    const limits = this.o.limits();
    if (this.buffer.length >= limits.batchMaxRows) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), limits.batchDelayMs);
      this.timer.unref();
    }
  }

  private advance(conversationId: string, seq: number): void {
    const had = this.cursors.get(conversationId);
    if (had !== undefined && seq <= had) return;
    this.track(conversationId, seq);
  }

  /** Set a cursor as the most recently active one (a Map keeps insertion order: the oldest come first). */
  private track(conversationId: string, seq: number): void {
    const had = this.cursors.has(conversationId);
    if (had) this.cursors.delete(conversationId);
    this.cursors.set(conversationId, seq);
    if (!had) this.bound();
  }

  /** How many conversations this process tracks (see maxTrackedConversations). */
  get tracked(): number {
    return this.cursors.size;
  }

  private bound(): void {
    const max = this.o.limits().maxTrackedConversations ?? DEFAULT_MAX_TRACKED;
    if (this.cursors.size <= max) return;
    // Down to 90 %, so a full map does not scan on every new conversation.
    let drop = this.cursors.size - Math.floor(max * 0.9);
    for (const c of this.cursors.keys()) {
      if (drop <= 0) break;
      if (this.openRemote.has(c) || this.chains.has(c)) continue;
      this.cursors.delete(c);
      drop--;
    }
  }

  /** Write what is buffered (one batch at a time, in order); resolves once it is committed. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const run = async (): Promise<void> => {
      while (this.buffer.length) {
        const batch = this.buffer.splice(0, this.o.limits().batchMaxRows);
        this.inflight = batch;
        try {
          await this.write(batch);
          this.warnedFull = false;
        } catch (err) {
          this.buffer.unshift(...batch);
          this.o.logger.warn(`writing ${batch.length} events to the team log failed (retrying): ${(err as Error).message}`);
          if (!this.closed && !this.timer) {
            this.timer = setTimeout(() => void this.flush(), Math.max(250, this.o.limits().batchDelayMs * 10));
            this.timer.unref();
          }
          return;
        } finally {
          this.inflight = [];
        }
      }
    };
    const p = (this.writing ?? Promise.resolve()).then(run);
    this.writing = p;
    void p.finally(() => {
      if (this.writing === p) this.writing = undefined;
    });
    return p;
  }

  private async write(batch: Row[]): Promise<void> {
    const events = batch.filter((r) => r.notice === undefined);
    const notices = batch.flatMap((r) => (r.notice === undefined ? [] : [r.notice]));
    const rows = events.map((r) => ({ conversation_id: r.conversationId, seq: r.seq, type: r.type, origin: r.origin, ts: r.event.ts, event: JSON.stringify(r.event) }));
    const bells = new Map<string, Doorbell>();
    for (const r of events) {
      const b = bells.get(r.conversationId);
      if (!b) bells.set(r.conversationId, { c: r.conversationId, s: r.seq, f: r.seq, o: r.origin });
      else {
        b.s = Math.max(b.s, r.seq);
        b.f = Math.min(b.f!, r.seq);
      }
    }
    await this.o.knex.transaction(async (trx) => {
      // A process that lost its lease while stalled may write seqs another run wrote: the first one stays.
      if (rows.length) await trx('team_events').insert(rows).onConflict(['conversation_id', 'seq']).ignore();
      if (bells.size) await trx.raw('SELECT pg_notify(?, p) FROM unnest(?::text[]) AS p', [EVENTS_CHANNEL, [...bells.values()].map(doorbellPayload)]);
      // Notified in the order sent, after the events' doorbells (PostgreSQL keeps a transaction's order).
      if (notices.length) await trx.raw('SELECT pg_notify(?, p) FROM unnest(?::text[]) WITH ORDINALITY AS n(p, i) ORDER BY i', [NOTICES_CHANNEL, notices]);
    });
  }

  /** One at a time per conversation. */
  private serial<T>(conversationId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(conversationId) ?? Promise.resolve();
    const p = prev.then(fn, fn);
    const tail = p.catch(() => undefined);
    this.chains.set(conversationId, tail);
    void tail.then(() => {
      if (this.chains.get(conversationId) === tail) this.chains.delete(conversationId);
    });
    return p;
  }

  /** A doorbell rang (LISTEN): catch up when it is news. */
  ring(payload: string | undefined): void {
    const bell = parseDoorbell(payload);
    if (!bell) {
      // Unreadable (or a bare "something changed"): look at everything tracked.
      this.catchUpAll();
      return;
    }
    if (bell.o === this.o.self || bell.s <= (this.cursors.get(bell.c) ?? 0)) return;
    void this.catchUp(bell.c, bell.f).catch((err) => this.o.logger.warn(`catching up conversation ${bell.c} failed: ${(err as Error).message}`));
  }

  /** A notice doorbell: passed on once the events logged before it are folded in. */
  ringNotice(payload: string | undefined): void {
    let bell: z.infer<typeof NoticeBell>;
    try {
      const parsed = NoticeBell.safeParse(JSON.parse(payload ?? ''));
      if (!parsed.success) return;
      bell = parsed.data;
    } catch {
      return;
    }
    if (bell.o === this.o.self || this.closed || !this.o.noticed) return;
    void this.serial(bell.c, async () => {
      if ((this.cursors.get(bell.c) ?? 0) < bell.s) await this.catchUpNow(bell.c);
      await this.o.noticed!(bell.c, bell.o, bell.m);
    }).catch((err) => this.o.logger.warn(`a notice of conversation ${bell.c} failed: ${(err as Error).message}`));
  }

  /** After a lost LISTEN connection, or on the poll: every conversation this process tracks. */
  catchUpAll(only?: Iterable<string>): void {
    for (const c of only ?? [...this.cursors.keys()]) void this.catchUp(c).catch((err) => this.o.logger.warn(`catching up conversation ${c} failed: ${(err as Error).message}`));
  }

  /**
   * The poll (`pollMs`): a doorbell can be missed (rung while LISTEN was reconnecting), and a
   * conversation at rest that nothing else brings up again would then stay behind for its
   * subscribers here. One query for every conversation tracked here tells which are behind.
   */
  async poll(): Promise<void> {
    if (this.closed) return;
    const ids = [...this.cursors.keys()];
    for (let i = 0; i < ids.length; i += POLL_CHUNK) {
      const rows = (await this.o.knex.raw('SELECT conversation_id, MAX(seq) AS top FROM team_events WHERE conversation_id = ANY(?::text[]) GROUP BY conversation_id', [ids.slice(i, i + POLL_CHUNK)])).rows as Array<{ conversation_id: string; top: number }>;
      const behind = rows.filter((r) => Number(r.top) > (this.cursors.get(r.conversation_id) ?? 0)).map((r) => r.conversation_id);
      if (behind.length) this.catchUpAll(behind);
    }
  }

  /** Fold in what other processes logged for a conversation since the cursor. */
  catchUp(conversationId: string, from?: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.serial(conversationId, () => this.catchUpNow(conversationId, from));
  }

  /** `from`: the first seq of a batch a doorbell announced (news: folded even on first sight). */
  private async catchUpNow(conversationId: string, from?: number): Promise<void> {
    let cursor = this.cursors.get(conversationId);
    if (cursor === undefined) {
      // First sight: a run still going is folded in from its agent_start (so a snapshot here
      // shows it); a conversation at rest needs nothing folded, only a cursor.
      const r = (await this.o.knex.raw(
        `SELECT MAX(seq) AS last,
                MAX(seq) FILTER (WHERE type = 'agent_start') AS started,
                MAX(seq) FILTER (WHERE type = 'agent_end') AS ended
           FROM team_events WHERE conversation_id = ?`,
        [conversationId],
      )).rows[0] as { last: number | null; started: number | null; ended: number | null };
      cursor = this.cursors.get(conversationId); // local events may have arrived meanwhile
      if (cursor === undefined) {
        if (r.last === null) return;
        const open = r.started !== null && (r.ended === null || r.ended < r.started);
        cursor = open ? Number(r.started) - 1 : Number(r.last);
        if (from !== undefined && from - 1 < cursor) cursor = Math.max(0, from - 1);
        this.track(conversationId, cursor);
      }
    }
    for (;;) {
      const rows = await this.read(conversationId, this.cursors.get(conversationId)!, CATCH_UP_PAGE);
      for (const r of rows) this.fold(r);
      if (rows.length < CATCH_UP_PAGE) return;
    }
  }

  private async read(conversationId: string, after: number, limit: number): Promise<Array<{ seq: number; origin: string; event: string }>> {
    return this.o.knex('team_events').select('seq', 'origin', 'event').where('conversation_id', conversationId).andWhere('seq', '>', after).orderBy('seq').limit(limit);
  }

  /** A logged row: published here when another process wrote it and it is past the cursor. */
  private fold(r: { seq: number; origin: string; event: string }): LifecycleEvent {
    const e = JSON.parse(r.event) as LifecycleEvent;
    if (r.seq > (this.cursors.get(e.conversationId) ?? 0)) {
      this.track(e.conversationId, Number(r.seq));
      if (r.origin !== this.o.self) {
        if (e.type === 'agent_start') this.openRemote.set(e.conversationId, e.runId);
        else if (e.type === 'agent_end' && this.openRemote.get(e.conversationId) === e.runId) this.openRemote.delete(e.conversationId);
        this.o.publish(e);
      }
    }
    return e;
  }

  /**
   * Everything logged after `lastSeq` (what this process has not committed yet included), handed
   * to `deliver` before anything else of the conversation is published. False when the log does
   * not reach back to `lastSeq` (pruned, or never logged), or holds more than `replayMaxEvents`.
   */
  replay(conversationId: string, lastSeq: number, deliver: (events: LifecycleEvent[]) => void): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return this.serial(conversationId, async () => {
      const { replayMaxEvents: max, replayWaitMs, batchDelayMs } = this.o.limits();
      // Folded in first (nobody here follows it yet), so the cursor is set and later doorbells
      // bring only what comes after what is handed over.
      await this.catchUpNow(conversationId);
      const first = (await this.o.knex('team_events').min({ seq: 'seq' }).where('conversation_id', conversationId).first()) as { seq: number | null } | undefined;
      const local = () => [...this.inflight, ...this.buffer].filter((r) => r.conversationId === conversationId && r.notice === undefined);
      const lowest = first?.seq ?? local()[0]?.seq;
      if (lowest === undefined || lowest > lastSeq) return false;
      // The client saw events live elsewhere that their writer has not committed yet (its batch is
      // at most batchDelayMs old). Handed over now, the client would get them again once they are
      // folded in here: wait for them (still one at a time with this conversation's catch-ups, so
      // other subscribers here get them meanwhile). A writer that died before writing them never
      // will: past replayWaitMs the client gets a snapshot instead.
      const deadline = Date.now() + replayWaitMs;
      const step = Math.max(5, Math.min(50, batchDelayMs));
      while ((this.cursors.get(conversationId) ?? 0) < lastSeq) {
        if (this.closed || Date.now() >= deadline) {
          this.o.logger.debug(`team replay of ${conversationId}: the log did not reach seq ${lastSeq} in ${replayWaitMs} ms (a snapshot instead)`);
          return false;
        }
        await new Promise((r) => setTimeout(r, step));
        await this.catchUpNow(conversationId);
      }
      const rows = await this.read(conversationId, lastSeq, max + 1);
      if (rows.length > max) return false;
      const events = rows.map((r) => this.fold(r));
      let top = events.length ? events[events.length - 1]!.seq : lastSeq;
      for (const r of local()) {
        if (r.seq > top) {
          events.push(r.event);
          top = r.seq;
        }
      }
      this.o.logger.debug(`team replay of ${conversationId} after seq ${lastSeq}: ${events.length} events`);
      deliver(events);
      return true;
    });
  }

  /** Bounded retention: older than `maxAgeMs`, or beyond the newest `maxPerConversation` of a conversation. */
  async prune(maxAgeMs: number, maxPerConversation: number): Promise<number> {
    const old = await this.o.knex('team_events').where('ts', '<', Date.now() - maxAgeMs).del();
    const over = await this.o.knex.raw(
      `DELETE FROM team_events e USING (
         SELECT conversation_id, MAX(seq) AS top FROM team_events GROUP BY conversation_id HAVING COUNT(*) > ?
       ) x
       WHERE e.conversation_id = x.conversation_id
         AND e.seq <= (SELECT seq FROM team_events i WHERE i.conversation_id = x.conversation_id ORDER BY seq DESC OFFSET ? LIMIT 1)`,
      [maxPerConversation, maxPerConversation],
    );
    return old + ((over as { rowCount?: number }).rowCount ?? 0);
  }

  /** Write what is left, then refuse more. */
  async close(): Promise<void> {
    await this.flush().catch(() => undefined);
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

function doorbellPayload(b: Doorbell): string {
  const s = JSON.stringify(b);
  // NOTIFY payloads stop at 8000 bytes: an id that long gets a bare bell (readers look at everything).
  return Buffer.byteLength(s) < 7900 ? s : JSON.stringify({ o: b.o });
}

function parseDoorbell(payload: string | undefined): Doorbell | undefined {
  try {
    const v = JSON.parse(payload ?? '') as Partial<Doorbell>;
    if (typeof v.c !== 'string' || typeof v.s !== 'number' || typeof v.o !== 'string') return undefined;
    return typeof v.f === 'number' && v.f <= v.s ? (v as Doorbell) : { c: v.c, s: v.s, o: v.o };
  } catch {
    return undefined;
  }
}

/**
 * Issue 19, two "Must show" items through the real binaries against a real PostgreSQL (a
 * throwaway cluster, tests/helpers/postgres.ts; skipped with one line without one):
 * `liveagent chat --conversation` continues a conversation stored there (and `conversations`
 * lists it; no SQLite file appears), and kill -9 of the `serve` process owning a run keeps the
 * partial reply it had saved, flagged as partial, for the process that takes the conversation
 * over, whose next run continues after it. team-fanout.test.ts already proves the take-over
 * itself (one closing `agent_end`, the next send running on the survivor, replay by seq); this
 * file proves what happens to the reply.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { anthropicReply, anthropicTextStream, startMockAnthropic } from '../fixtures/mock-anthropic.js';
import type { RecordedRequest } from '../fixtures/mock-http.js';
import { startServe, TeamClient, type Msg, type ServeProcess } from '../fixtures/team-servers.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { trackResources } from '../helpers/cleanup.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const KEY = 'sk-ant-h19d';
const LEASE_MS = 1500;
/** How long a step waits for what it expects (a failure then says what it got). */
const WAIT_MS = Number(process.env.H19_WAIT_MS ?? 30_000);

const isTitleRequest = (r: RecordedRequest) => JSON.stringify(r.body.system ?? '').includes('You name chat conversations');
const chatRequests = (requests: RecordedRequest[]) => requests.filter((r) => !isTitleRequest(r));

/** A wire message's text (the request body holds strings or content blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return (content as Array<{ type: string; text?: string }>).filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
}
const wireTurns = (r: RecordedRequest) => (r.body.messages as Array<{ role: string; content: unknown }>).map((m) => ({ role: m.role, text: textOf(m.content) }));
const messageText = (m: { content: Array<{ type: string; text?: string }> }) => m.content.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');

describe.skipIf(postgresSkip)('the CLI and serve processes on a real PostgreSQL', () => {
  const pg = usePostgres();
  const t = trackResources();

  const openKnex = async (url: string): Promise<Knex> => {
    const { default: createKnex } = await import('knex');
    const db = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
    t.closers.push({ close: () => db.destroy() });
    return db;
  };

  it('chat twice with --conversation continues the conversation stored in PostgreSQL; conversations --json lists it; no liveagent.db appears', async () => {
    const url = await pg.cluster().createDatabase();
    const mock = await startMockAnthropic({
      apiKey: KEY,
      script: (req) => {
        if (isTitleRequest(req)) return anthropicReply({ text: 'Introductions' });
        return anthropicReply({ text: JSON.stringify(req.body.messages).includes('What is my name') ? 'Your name is Ada.' : 'Nice to meet you, Ada.' });
      },
    });
    t.closers.push(mock);
    const home = t.tmp('h19d-cli-');
    const env = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url, LIVEAGENT_DATABASE_URL: url };

    const first = await runCli(['chat', '--mode', 'text', '--json', 'My name is Ada.'], { home, env });
    expect(first.code, first.stderr).toBe(0);
    const id = jsonLines(first.stdout)[0]!.conversationId as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = await runCli(['chat', '--mode', 'text', '--json', '--conversation', id, 'What is my name?'], { home, env });
    expect(second.code, second.stderr).toBe(0);
    expect(jsonLines(second.stdout)[0]!.conversationId).toBe(id);
    expect(second.stdout).toContain('Your name is Ada.');

    // The second process knew the first turn only from PostgreSQL.
    const requests = chatRequests(mock.requests);
    expect(requests).toHaveLength(2);
    expect(wireTurns(requests[0]!)).toEqual([{ role: 'user', text: 'My name is Ada.' }]);
    expect(wireTurns(requests[1]!)).toEqual([
      { role: 'user', text: 'My name is Ada.' },
      { role: 'assistant', text: 'Nice to meet you, Ada.' },
      { role: 'user', text: 'What is my name?' },
    ]);

    const listed = await runCli(['conversations', '--json'], { home, env: { LIVEAGENT_DATABASE_URL: url } });
    expect(listed.code, listed.stderr).toBe(0);
    const rows = jsonLines(listed.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, messageCount: 4, provider: 'claude_code' });

    // Stored in PostgreSQL, and nowhere in the home: no SQLite file, and without the URL the
    // same home knows no conversation.
    const db = await openKnex(url);
    const stored = (await db('messages').select('role', 'status').where({ conversation_id: id }).orderBy('ordinal')) as Array<{ role: string; status: string }>;
    expect(stored).toEqual([
      { role: 'user', status: 'complete' },
      { role: 'assistant', status: 'complete' },
      { role: 'user', status: 'complete' },
      { role: 'assistant', status: 'complete' },
    ]);
    expect(fs.readdirSync(home).filter((f) => f.startsWith('liveagent.db'))).toEqual([]);
    expect(fs.existsSync(path.join(home, 'liveagent.db'))).toBe(false);
    const local = await runCli(['conversations', '--json'], { home });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout).toBe('');
  }, 90_000);

  it('kill -9 of the owning serve process mid-run: the partial reply it saved is kept, flagged partial, in the survivor\'s snapshot, and the survivor\'s next run continues after it', async () => {
    const url = await pg.cluster().createDatabase();
    const DELTAS = 400;
    const fullText = Array.from({ length: DELTAS }, (_, i) => (i === 0 ? 'tok0' : ` tok${i}`)).join('');
    const mock = await startMockAnthropic({
      apiKey: KEY,
      script: (req) => {
        if (isTitleRequest(req)) return anthropicReply({ text: 'Counting' });
        // The first run streams for ~10 s (killed long before its end); the next one answers at once.
        const last = (req.body.messages as Array<{ content: unknown }>).at(-1)!;
        if (textOf(last.content) === 'count') return { kind: 'sse', events: anthropicTextStream(DELTAS), delayMs: 25 };
        return anthropicReply({ text: 'Picking up where I stopped.' });
      },
    });
    t.closers.push(mock);
    const env = { LIVEAGENT_DATABASE_URL: url, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url };
    const settings = {
      team: { leaseMs: LEASE_MS, pollMs: 300, batchDelayMs: 10, forwardTimeoutMs: 10_000, replayWaitMs: 2000 },
      runtime: { persistIntervalMs: 100 },
    };
    const procs: ServeProcess[] = [];
    const clients: TeamClient[] = [];
    t.closers.push({ close: () => Promise.all(procs.map((p) => p.stop())) });
    t.closers.push({ close: () => clients.forEach((c) => c.close()) });
    const serve = async () => {
      const home = t.tmp('h19d-serve-');
      fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify(settings));
      const p = await startServe(home, env);
      procs.push(p);
      return p;
    };
    const client = async (p: ServeProcess) => {
      const c = await TeamClient.connect(p);
      clients.push(c);
      return c;
    };
    const [A, B] = [await serve(), await serve()];
    const db = await openKnex(url);
    const partialRow = async (conversationId: string) =>
      (await db('messages').where({ conversation_id: conversationId, role: 'assistant' }).orderBy('ordinal').first()) as { id: string; status: string; content: string; meta: string | null; ordinal: number } | undefined;

    const onA = await client(A);
    const sent = await onA.request({ type: 'chat_queue', item: { action: 'send', clientRequestId: 'k1', text: 'count' } });
    expect(sent.ok, JSON.stringify(sent)).toBe(true);
    const conversationId = sent.data.conversationId as string;
    const deadRun = sent.data.runId as string;
    await onA.until((all) => all.filter((m) => m.type === 'token' && m.event.runId === deadRun).length >= 20, WAIT_MS, 'tokens of the run on A');
    // A progress save is in PostgreSQL (saved every persistIntervalMs while the reply streams).
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const row = await partialRow(conversationId);
      if (row && messageText({ content: JSON.parse(row.content) }).length >= 20) break;
      if (Date.now() > deadline) throw new Error(`no progress save of the reply reached the database; got ${JSON.stringify(row)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    A.child.kill('SIGKILL');
    await new Promise((r) => (A.child.exitCode !== null || A.child.signalCode !== null ? r(undefined) : A.child.once('exit', r)));
    expect(onA.events(conversationId).some((m) => m.event.type === 'agent_end'), 'the run on A had not ended when A was killed').toBe(false);

    // What A had saved when it died: part of the reply, stored as partial.
    const saved = (await partialRow(conversationId))!;
    const savedText = messageText({ content: JSON.parse(saved.content) });
    expect(saved.status).toBe('partial');
    expect(JSON.parse(saved.meta ?? '{}')).toMatchObject({ partial: true });
    expect(savedText.length).toBeGreaterThanOrEqual(20);
    expect(savedText.length).toBeLessThan(fullText.length);
    expect(fullText.startsWith(savedText)).toBe(true);

    const loadOn = async (c: TeamClient) => {
      const before = c.messages.length;
      const r = await c.request({ type: 'conversations.load', conversationId });
      expect(r.ok, JSON.stringify(r)).toBe(true);
      const snap = c.messages.slice(before).find((m) => m.type === 'snapshot' && m.conversationId === conversationId) as Msg | undefined;
      expect(snap, 'a snapshot before the reply to conversations.load').toBeDefined();
      return snap!;
    };
    // Until it takes over, the survivor still follows A's run from the shared event log: the
    // snapshot shows it running, with the reply as far as A's logged events got.
    const early = await loadOn(await client(B));
    expect(early.running).toBe(true);
    expect(early.partial?.id).toBe(saved.id);
    expect(early.partial.meta).toMatchObject({ partial: true });
    expect(fullText.startsWith(messageText(early.partial))).toBe(true);

    // The next send on B takes the conversation over (A's lease lapses) and runs there.
    const onB = await client(B);
    const next = await onB.request({ type: 'chat_queue', item: { action: 'send', conversationId, clientRequestId: 'k2', text: 'go on' } }, WAIT_MS);
    expect(next.ok, JSON.stringify(next)).toBe(true);
    const runId = next.data.runId as string;
    await onB.until((all) => all.some((m) => m.type === 'done' && m.event.runId === runId), WAIT_MS, 'the run on B done');
    const owner = ((await db('team_leases').where({ conversation_id: conversationId }).first()) as { owner: string }).owner;
    const origins = (await db('team_events').distinct('origin').where({ conversation_id: conversationId }).andWhereRaw("event::jsonb->>'runId' = ?", [runId])).map((r: { origin: string }) => r.origin);
    expect(origins).toEqual([owner]);

    // The survivor's request carried the partial reply, as the assistant turn before the new message.
    const requests = chatRequests(mock.requests);
    expect(requests).toHaveLength(2);
    expect(wireTurns(requests[1]!)).toEqual([
      { role: 'user', text: 'count' },
      { role: 'assistant', text: savedText },
      { role: 'user', text: 'go on' },
    ]);

    // Stored: the partial reply where it was, still partial; the new turn after it, complete.
    const rows = (await db('messages').select('id', 'role', 'status', 'content').where({ conversation_id: conversationId }).orderBy('ordinal')) as Array<{ id: string; role: string; status: string; content: string }>;
    expect(rows.map((r) => [r.role, r.status, messageText({ content: JSON.parse(r.content) })])).toEqual([
      ['user', 'complete', 'count'],
      ['assistant', 'partial', savedText],
      ['user', 'complete', 'go on'],
      ['assistant', 'complete', 'Picking up where I stopped.'],
    ]);
    expect(rows[1]!.id).toBe(saved.id);

    // And a fresh client of the survivor sees all of it, the dead run's reply still flagged.
    const late = await loadOn(await client(B));
    expect(late.running).toBe(false);
    const shown = (late.messages as Msg[]).map((m) => ({ role: m.role, text: messageText(m as never), partial: m.meta?.partial === true }));
    expect(shown).toEqual([
      { role: 'user', text: 'count', partial: false },
      { role: 'assistant', text: savedText, partial: true },
      { role: 'user', text: 'go on', partial: false },
      { role: 'assistant', text: 'Picking up where I stopped.', partial: false },
    ]);
  }, 120_000);
});

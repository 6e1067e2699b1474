/**
 * Three real processes writing one PostgreSQL history at once (issue 19 item 1), all started
 * together on a fresh database (so they also race the schema migrations): first each in its own
 * conversation, then all three in one shared conversation, where they race for the next ordinal
 * and the seq reservation (both decided under the conversation row's lock). Every message of
 * every writer must be stored once, ordinals must run 1..N without holes, no error may reach a
 * run or the log, and sequence numbers never repeat within a conversation.
 *
 * The child (tests/fixtures/history-postgres-writer-child.ts) is bundled with rolldown, as in
 * history-crash.test.ts. Without a PostgreSQL the file is skipped with one line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import createKnex from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import { createKernel } from '../../core/kernel.js';
import historyPostgres from '../../plugins/history-postgres/index.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { bundledChild } from '../helpers/child-bundle.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const pg = usePostgres();
const fixtureChild = bundledChild('tests/fixtures/history-postgres-writer-child.ts', 'h19-pg-writers');

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

interface WriterOutput {
  code: number | null;
  errors: string[];
  seqs: Map<string, number[]>;
  done?: { conversationId: string; failed: string[] };
  stderr: string;
}

function runWriter(url: string, writer: number, turns: number, shared?: string): Promise<WriterOutput> {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'h19-writer-'));
  dirs.push(cwd);
  const child = spawn(process.execPath, [fixtureChild.entry(), url, String(writer), String(turns), ...(shared ? [shared] : [])], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const res: WriterOutput = { code: null, errors: [], seqs: new Map(), stderr: '' };
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, nl)) as { c?: string; seq?: number; error?: string; done?: boolean; conversationId?: string; failed?: string[] };
      buf = buf.slice(nl + 1);
      if (line.error) res.errors.push(line.error);
      else if (line.done) res.done = { conversationId: line.conversationId!, failed: line.failed! };
      else if (line.c && typeof line.seq === 'number') res.seqs.set(line.c, [...(res.seqs.get(line.c) ?? []), line.seq]);
    }
  });
  child.stderr!.on('data', (d) => (res.stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ ...res, code })));
}

interface Row {
  conversation_id: string;
  ordinal: number;
  role: string;
  status: string;
  content: string;
}
const textOf = (r: Row) => (JSON.parse(r.content) as Array<{ type: string; text?: string }>).map((b) => (b.type === 'text' ? b.text : '')).join('');

async function readRows(url: string): Promise<{ rows: Row[]; conversations: Array<{ id: string; last_seq: string }> }> {
  const knex = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    return {
      rows: await knex('messages').select('conversation_id', 'ordinal', 'role', 'status', 'content').orderBy(['conversation_id', 'ordinal']),
      conversations: await knex('conversations').select('id', 'last_seq'),
    };
  } finally {
    await knex.destroy();
  }
}

function expectClean(outs: WriterOutput[]) {
  for (const o of outs) {
    expect(o.errors, o.stderr).toEqual([]);
    expect(o.done?.failed, o.stderr).toEqual([]);
    expect(o.code, o.stderr).toBe(0);
  }
}

const strictlyIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

describe.skipIf(!!postgresSkip)('history-postgres: concurrent writers', () => {
  it('three processes, each in its own conversation, on a fresh database: everything stored, seq rising', async () => {
    const url = await pg.cluster().createDatabase();
    const turns = 5;
    const outs = await Promise.all([1, 2, 3].map((w) => runWriter(url, w, turns)));
    expectClean(outs);
    const { rows, conversations } = await readRows(url);
    expect(conversations).toHaveLength(3);
    for (const [w, o] of outs.entries()) {
      const id = o.done!.conversationId;
      const mine = rows.filter((r) => r.conversation_id === id);
      expect(mine.map((r) => r.ordinal)).toEqual(Array.from({ length: turns * 4 }, (_, i) => i + 1));
      expect(mine.every((r) => r.status === 'complete')).toBe(true);
      expect(mine.filter((r) => r.role === 'user').map(textOf)).toEqual(Array.from({ length: turns }, (_, t) => `w${w + 1}-t${t + 1}`));
      const seqs = o.seqs.get(id)!;
      expect(strictlyIncreasing(seqs)).toBe(true);
      expect(Number(conversations.find((c) => c.id === id)!.last_seq)).toBe(seqs.at(-1));
    }
  }, 90_000);

  it('three processes in one conversation: ordinals 1..N without holes, every message once, seq never repeats', async () => {
    const url = await pg.cluster().createDatabase();
    // The shared conversation exists before the writers start (a run continues only a known one).
    const kernel = await createKernel({
      home: fs.mkdtempSync(path.join(os.tmpdir(), 'h19-seed-')),
      plugins: [historySqlite, historyPostgres, { name: 'p', apply: (ctx) => void ctx.registerProvider(fakeProvider([{ text: 'seeded' }])) }],
      settings: { history: { url } },
      thirdParty: false,
    });
    dirs.push(kernel.paths.home);
    const seed = kernel.runtime.startRun({ input: [{ type: 'text', text: 'seed' }], mode: 'text' });
    expect((await seed.result).status).toBe('completed');
    await kernel.shutdown();
    const id = seed.conversationId;

    const turns = 4;
    const outs = await Promise.all([1, 2, 3].map((w) => runWriter(url, w, turns, id)));
    expectClean(outs);
    const { rows } = await readRows(url);
    const mine = rows.filter((r) => r.conversation_id === id);
    expect(mine.map((r) => r.ordinal)).toEqual(Array.from({ length: 2 + 3 * turns * 4 }, (_, i) => i + 1));
    const users = mine.filter((r) => r.role === 'user').map(textOf).sort();
    expect(users).toEqual(['seed', ...[1, 2, 3].flatMap((w) => Array.from({ length: turns }, (_, t) => `w${w}-t${t + 1}`))].sort());
    expect(mine.filter((r) => r.role === 'assistant' && textOf(r).startsWith('reply'))).toHaveLength(3 * turns);
    const all: number[] = [];
    for (const o of outs) {
      const seqs = o.seqs.get(id)!;
      expect(strictlyIncreasing(seqs)).toBe(true);
      all.push(...seqs);
    }
    expect(new Set(all).size).toBe(all.length);
  }, 90_000);
});

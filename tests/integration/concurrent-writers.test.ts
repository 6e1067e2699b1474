/**
 * Many processes writing one history database at once: 8 real node processes running tool
 * loops plus one streaming a long reply saved every millisecond, all started together on a
 * fresh home (so they also race the schema migrations). Every message from every writer must
 * be stored, no error may reach a run or the log, and sequence numbers never repeat within a
 * conversation. Then the same with real `liveagent chat` CLIs (dist/) on one home, alone and
 * beside a `serve` taking messages over its socket.
 *
 * The child (tests/fixtures/concurrent-writer-child.ts) is bundled with rolldown, as in
 * history-crash.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { startServer, type RunningServer } from '../../hosts/server/start-server.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { jsonLines, runCli, tempHome, type CliResult } from '../helpers/cli.js';
import { TestClient, cleanup, sendTo, text, type Booted } from './gateway-harness.js';

import { bundledChild } from '../helpers/child-bundle.js';

const fixtureChild = bundledChild('tests/fixtures/concurrent-writer-child.ts', 'concurrent-writers');

const children: ChildProcess[] = [];
const homes: string[] = [];
const servers: RunningServer[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await cleanup();
  for (const s of servers.splice(0)) await s.close();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

interface WriterOutput {
  code: number | null;
  errors: string[];
  seqs: Map<string, number[]>;
  done?: { conversationId: string; failed: string[] };
  stderr: string;
}

function runWriter(home: string, writer: number, turns: number, scenario: 'rounds' | 'stream'): Promise<WriterOutput> {
  const child = spawn(process.execPath, [fixtureChild.entry(), home, String(writer), String(turns), scenario], { stdio: ['ignore', 'pipe', 'pipe'] });
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
      else if (line.c && typeof line.seq === 'number') {
        const list = res.seqs.get(line.c) ?? [];
        list.push(line.seq);
        res.seqs.set(line.c, list);
      }
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

function readDb(home: string): { rows: Row[]; integrity: string } {
  const db = new Database(path.join(home, 'liveagent.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT conversation_id, ordinal, role, status, content FROM messages ORDER BY conversation_id, ordinal').all() as Row[];
    return { rows, integrity: db.pragma('integrity_check', { simple: true }) as string };
  } finally {
    db.close();
  }
}

describe('concurrent writers on one history database', () => {
  it('8 processes running tool loops plus one streaming writer, from a fresh home: every message stored, no error, seq unique', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-concurrent-'));
    homes.push(home);
    const TURNS = 12;
    const STREAM_TURNS = 4;
    const outputs = await Promise.all([
      ...Array.from({ length: 8 }, (_, w) => runWriter(home, w, TURNS, 'rounds')),
      runWriter(home, 8, STREAM_TURNS, 'stream'),
    ]);

    // Every writer's outcome at once, so a failure shows how many runs broke and where.
    const outcomes = outputs.map((o, w) => ({ writer: w, code: o.code, errors: o.errors, failed: o.done?.failed ?? [o.stderr.trim().split('\n').at(-1)] }));
    expect(outcomes).toEqual(outputs.map((_, w) => ({ writer: w, code: 0, errors: [], failed: [] })));
    for (const o of outputs) {
      // Sequence numbers never repeat within a conversation and only rise.
      for (const [, seqs] of o.seqs) {
        expect(new Set(seqs).size).toBe(seqs.length);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }
    }

    const { rows, integrity } = readDb(home);
    expect(integrity).toBe('ok');
    for (const [w, o] of outputs.entries()) {
      const mine = rows.filter((r) => r.conversation_id === o.done!.conversationId);
      const stream = w === 8;
      const turns = stream ? STREAM_TURNS : TURNS;
      expect(mine.map((r) => r.ordinal)).toEqual(Array.from({ length: turns * (stream ? 2 : 4) }, (_, i) => i + 1));
      expect(mine.every((r) => r.status === 'complete')).toBe(true);
      for (let t = 1; t <= turns; t++) {
        const turn = stream ? mine.slice((t - 1) * 2, t * 2) : mine.slice((t - 1) * 4, t * 4);
        expect(turn.map((r) => r.role)).toEqual(stream ? ['user', 'assistant'] : ['user', 'assistant', 'tool', 'assistant']);
        expect(textOf(turn[0]!)).toBe(`w${w}-t${t}`);
        if (stream) expect(textOf(turn[1]!)).toMatch(new RegExp(`^0 1 2 .* 199 end:w${w}-t${t}$`));
        else expect(textOf(turn[3]!)).toBe(`reply to w${w}-t${t}`);
      }
    }
  }, 120_000);
});

describe('concurrent liveagent chat CLIs on one home', () => {
  let mock: MockAnthropicServer;
  const KEY = 'sk-ant-test';
  beforeAll(async () => {
    mock = await startMockAnthropic({ apiKey: KEY, script: () => anthropicReply({ text: ['Hello', ' from', ' the mock'] }) });
  });
  afterAll(() => mock.close());

  it('6 CLIs at once (a fresh home: they race the migrations too), then 6 continuing their conversations: every run succeeds and is stored', async () => {
    const home = tempHome();
    homes.push(home);
    const env = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url };
    const N = 6;
    // Every run's outcome at once: a failure shows how many broke, and why.
    const outcome = (r: CliResult) => ({ code: r.code, stderr: r.stderr.split('\n').filter((l) => /error|locked|busy|liveagent:/i.test(l)) });
    const ok = { code: 0, stderr: [] };
    const first = await Promise.all(Array.from({ length: N }, (_, i) => runCli(['chat', '--json', '--mode', 'text', `question ${i}`], { home, env, timeoutMs: 60_000 })));
    expect(first.map(outcome)).toEqual(first.map(() => ok));
    const ids = first.map((r) => jsonLines(r.stdout)[0]!.conversationId as string);
    const second = await Promise.all(ids.map((id, i) => runCli(['chat', '--json', '--conversation', id, `follow-up ${i}`], { home, env, timeoutMs: 60_000 })));
    expect(second.map(outcome)).toEqual(second.map(() => ok));
    const { rows, integrity } = readDb(home);
    expect(integrity).toBe('ok');
    expect(new Set(rows.map((r) => r.conversation_id)).size).toBe(N);
    for (const [i, id] of ids.entries()) {
      const mine = rows.filter((r) => r.conversation_id === id);
      expect(mine.map((r) => [r.role, textOf(r)])).toEqual([
        ['user', `question ${i}`],
        ['assistant', 'Hello from the mock'],
        ['user', `follow-up ${i}`],
        ['assistant', 'Hello from the mock'],
      ]);
    }
  }, 120_000);

  it('serve taking messages over its socket while 4 CLIs run on the same home: no message lost, every run succeeds', async () => {
    const home = tempHome();
    homes.push(home);
    // serve's own failures (a progress save that hit "database is locked") are only logged: watch its stderr.
    const logged: string[] = [];
    const write = process.stderr.write.bind(process.stderr) as (...args: unknown[]) => boolean;
    vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
      logged.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stderr.write);
    // Each reply streams in pieces saved as progress every millisecond: serve writes all the time.
    const provider = fakeProvider((req) => ({ text: [...Array.from({ length: 100 }, (_, i) => `${i} `), `served ${req.messages.length}`] }));
    // serve gets its settings handed in (its fake provider), so the CLIs keep using the mock Anthropic.
    const server = await startServer({
      port: 0,
      home,
      builtins: [historySqlite],
      extraPlugins: [{ name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) }],
      settings: { defaultProvider: 'fake', defaultMode: 'text', runtime: { persistIntervalMs: 1 } },
      thirdParty: false,
      log: () => {},
      webuiDir: path.join(home, 'no-webui'),
    });
    servers.push(server);
    const client = await TestClient.connect({ server, wsUrl: `${server.url.replace(/^http/, 'ws')}/ws` } as Booted);
    const env = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: mock.url };
    // Three conversations at once on the socket, each sending its next message when the last run
    // ends, until the CLIs are done (so serve writes the whole time they do).
    let clisDone = false;
    const socketTurns = (c: number) =>
      (async () => {
        let conversationId: string | undefined;
        let lastSeq = 0;
        const ends: string[] = [];
        for (let t = 0; t < 4 || !clisDone; t++) {
          const sent = await client.ok<{ conversationId: string }>(conversationId ? sendTo(conversationId, `socket ${c}.${t}`) : text(`socket ${c}.${t}`));
          conversationId = sent.conversationId;
          const end = await client.terminal(conversationId, lastSeq, 30_000);
          ends.push(end.type === 'done' ? 'done' : JSON.stringify(end));
          lastSeq = end.seq;
        }
        return { conversationId: conversationId!, ends };
      })();
    const sockets = Promise.all([0, 1, 2].map(socketTurns));
    const clis = await Promise.all(Array.from({ length: 4 }, (_, i) => runCli(['chat', '--json', '--mode', 'text', `cli ${i}`], { home, env, timeoutMs: 60_000 })));
    clisDone = true;
    const served = await sockets;
    expect(clis.map((r) => ({ code: r.code, stderr: r.stderr.split('\n').filter((l) => /error|locked|busy|liveagent:/i.test(l)) }))).toEqual(clis.map(() => ({ code: 0, stderr: [] })));
    expect(served.map((s) => s.ends)).toEqual(served.map((s) => s.ends.map(() => 'done')));
    expect(logged.filter((l) => /locked|SQLITE_BUSY|failed/i.test(l))).toEqual([]);
    const { rows } = readDb(home);
    for (const [c, s] of served.entries()) {
      const mine = rows.filter((r) => r.conversation_id === s.conversationId);
      expect(mine.map((r) => [r.role, r.status, textOf(r).replace(/^(\d+ )+/, '')])).toEqual(
        s.ends.flatMap((_, t) => [['user', 'complete', `socket ${c}.${t}`], ['assistant', 'complete', `served ${2 * t + 1}`]]),
      );
    }
    for (const [i, r] of clis.entries()) {
      const id = jsonLines(r.stdout)[0]!.conversationId as string;
      expect(rows.filter((x) => x.conversation_id === id).map((x) => [x.role, textOf(x)])).toEqual([
        ['user', `cli ${i}`],
        ['assistant', 'Hello from the mock'],
      ]);
    }
  }, 120_000);
});

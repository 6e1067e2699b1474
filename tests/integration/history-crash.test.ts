/**
 * kill -9 while a reply streams (or while a tool runs): everything committed before the kill
 * must survive, the database must be intact, and the conversation must go on.
 *
 * The child (tests/fixtures/history-crash-child.ts) is bundled to an .mjs with rolldown (vite's
 * bundler) into node_modules/.cache, so its bare imports (knex, better-sqlite3, zod, ...)
 * resolve from the project's node_modules.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Message, Plugin, Provider } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { collectAll } from '../helpers/streams.js';

import { bundledChild } from '../helpers/child-bundle.js';

const fixtureChild = bundledChild('tests/fixtures/history-crash-child.ts', 'history-crash');

const kernels: Kernel[] = [];
const children: ChildProcess[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

interface ChildReport {
  conversationId: string;
  lastSeq: number;
  partial: string;
}

/**
 * Start the child and wait for its report line (the database then holds the user message and
 * part of the reply). `maxSeq()` is the highest sequence number the child printed so far.
 */
function startChild(home: string, scenario: 'stream' | 'tool'): Promise<{ child: ChildProcess; report: ChildReport; maxSeq: () => number }> {
  const child = spawn(process.execPath, [fixtureChild.entry(), home, scenario], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  let maxSeq = 0;
  let reported = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child did not report in time; stderr: ${stderr}`)), 20_000);
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      stdout += d;
      for (let nl = stdout.indexOf('\n'); nl >= 0; nl = stdout.indexOf('\n')) {
        const line = JSON.parse(stdout.slice(0, nl)) as ChildReport | { seq: number };
        stdout = stdout.slice(nl + 1);
        if ('seq' in line) maxSeq = Math.max(maxSeq, line.seq);
        else if (!reported) {
          reported = true;
          clearTimeout(timer);
          resolve({ child, report: line, maxSeq: () => maxSeq });
        }
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the child exited early (code ${code}, signal ${signal}); stderr: ${stderr}`));
    });
  });
}

async function killHard(child: ChildProcess) {
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, signal) => r(signal)));
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

function tmpHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-history-crash-'));
  homes.push(home);
  return home;
}

function integrity(home: string): string {
  const db = new Database(path.join(home, 'liveagent.db'));
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

async function boot(home: string, provider: Provider, extra: Plugin[] = []) {
  const kernel = await createKernel({
    home,
    plugins: [historySqlite, { name: 'test-provider', apply: (ctx) => void ctx.registerProvider(provider) }, ...extra],
    thirdParty: false,
  });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return { kernel, history: kernel.services.get<HistoryService>(HISTORY_SERVICE)! };
}

const collect = collectAll<LifecycleEvent>;

const textOf = (m: Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

describe('history-sqlite after kill -9', () => {
  it('keeps the user message and the partial reply of a stream killed mid-way, and the conversation goes on', async () => {
    const home = tmpHome();
    const { child, report, maxSeq } = await startChild(home, 'stream');
    // Let it stream (and emit) well past its last save of progress before the kill.
    await new Promise((r) => setTimeout(r, 150));
    await killHard(child);
    const seen = maxSeq();
    expect(seen).toBeGreaterThan(report.lastSeq);
    expect(integrity(home)).toBe('ok');

    const provider = fakeProvider([{ text: 'after the crash' }]);
    const { kernel, history } = await boot(home, provider);
    const stored = (await history.getConversation(report.conversationId))!;
    expect(stored.messages.map((m) => [m.role, m.status])).toEqual([
      ['user', 'complete'],
      ['assistant', 'partial'],
    ]);
    expect(textOf(stored.messages[0]!)).toBe('crash test');
    const partial = textOf(stored.messages[1]!);
    expect(partial.startsWith(report.partial)).toBe(true);
    expect(partial).toMatch(/^(w\d+ )+$/);

    const run = kernel.runtime.startRun({ conversationId: report.conversationId, input: [{ type: 'text', text: 'still there?' }], mode: 'text' });
    const events = await collect(run.events);
    expect((await run.result).status).toBe('completed');
    expect(provider.requests[0]!.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'crash test'],
      ['assistant', partial],
      ['user', 'still there?'],
    ]);
    // Sequence numbers never repeat: the next run starts above everything the dead one emitted.
    expect(events[0]!.seq).toBeGreaterThan(seen);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => events[0]!.seq + i));
    expect((await history.getConversation(report.conversationId))!.messages.map((m) => m.status)).toEqual(['complete', 'partial', 'complete', 'complete']);
  });

  it('repairs a tool call left without a result by a kill during the tool, so the next request is valid', async () => {
    const home = tmpHome();
    const { child, report } = await startChild(home, 'tool');
    await killHard(child);
    expect(integrity(home)).toBe('ok');

    const provider = fakeProvider([{ text: 'recovered' }]);
    const { kernel, history } = await boot(home, provider);
    const stored = (await history.getConversation(report.conversationId))!;
    expect(stored.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(stored.messages[1]!.content).toEqual([{ type: 'tool_call', id: 'call_1', name: 'Hang', input: {} }]);

    const run = kernel.runtime.startRun({ conversationId: report.conversationId, input: [{ type: 'text', text: 'what happened?' }] });
    expect((await run.result).status).toBe('completed');
    const sent = provider.requests[0]!.messages;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(sent[2]!.content).toEqual([expect.objectContaining({ type: 'tool_result', toolCallId: 'call_1', toolName: 'Hang', isError: true })]);
  });
});

/**
 * AskUserQuestion through its public surface (the registered tool and the `askUserQuestion`
 * service of a booted kernel): argument validation and normalization, the one stamped
 * deadline, and how a pending question settles (answer, stop, timeout, deleted conversation).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject, Settings, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import askUserQuestion from '../../plugins/tool-ask-user-question/index.js';
import type { AskUserQuestionService } from '../../plugins/tool-ask-user-question/service.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

async function boot(settings: Settings = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-ask-'));
  homes.push(home);
  const kernel = await createKernel({ home, plugins: [askUserQuestion], settings, thirdParty: false });
  kernels.push(kernel);
  const tool = kernel.runtime.tools().find((t) => t.name === 'AskUserQuestion')!;
  const service = kernel.services.get<AskUserQuestionService>('askUserQuestion')!;
  return { kernel, tool, service, settings };
}

const opts = (...labels: string[]) => labels.map((label) => ({ label }));
const one = { questions: [{ prompt: 'Which database?', options: opts('Postgres', 'SQLite') }] };

function issuesOf(tool: ToolDefinition, args: unknown): string {
  const r = tool.parameters.safeParse(args);
  if (r.success) return '';
  return r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
}

let callCounter = 0;
/** Validate, prepare and execute one call the way the kernel does, recording emitted events. */
function call(tool: ToolDefinition, args: unknown, o: { id?: string; conversationId?: string; settings?: Settings; signal?: AbortSignal } = {}) {
  const events: Array<{ type: string; payload: JsonObject }> = [];
  const ctx: ToolContext = {
    toolCallId: o.id ?? `call_${++callCounter}`,
    toolName: tool.name,
    conversationId: o.conversationId ?? 'c_one',
    runId: 'r_1',
    mode: 'tools',
    workdir: os.tmpdir(),
    signal: o.signal ?? new AbortController().signal,
    update() {},
    emit: (type, payload) => void events.push({ type, payload }),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    paths: { home: os.tmpdir(), settingsFile: '', uploads: '', plugins: '' },
    settings: o.settings ?? {},
  };
  const parsed = tool.parameters.safeParse(args);
  if (!parsed.success) throw new Error(`invalid test args: ${JSON.stringify(parsed.error.issues)}`);
  const prepared = tool.prepareArguments ? tool.prepareArguments(parsed.data, ctx) : parsed.data;
  const result: Promise<ToolResult> = tool.execute(prepared, ctx);
  return { id: ctx.toolCallId, ctx, events, prepared: prepared as JsonObject, result };
}

const text = (r: ToolResult) => r.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
const answerJson = (a: unknown) => JSON.stringify(a);

describe('AskUserQuestion arguments', () => {
  it('fills ids by position and keeps optional fields', async () => {
    const { tool } = await boot();
    const r = tool.parameters.safeParse({
      questions: [
        { header: 'DB', prompt: 'Which database?', options: [{ label: 'Postgres', description: 'server' }, { label: 'SQLite' }] },
        { id: 'deploy', prompt: 'Where?', options: opts('Cloud', 'Laptop') },
        { prompt: 'Tests?', options: opts('Yes', 'No') },
      ],
    });
    expect(r.success).toBe(true);
    const q = (r as { data: { questions: Array<Record<string, unknown>> } }).data.questions;
    expect(q.map((x) => x.id)).toEqual(['q1', 'deploy', 'q3']);
    expect(q[0]).toEqual({ id: 'q1', header: 'DB', prompt: 'Which database?', options: [{ label: 'Postgres', description: 'server' }, { label: 'SQLite' }] });
  });

  it('moves the recommended option first', async () => {
    const { tool } = await boot();
    const r = tool.parameters.safeParse({ questions: [{ prompt: 'Pick', options: [{ label: 'A' }, { label: 'B' }, { label: 'C', recommended: true }] }] });
    expect(r.success && (r.data as { questions: Array<{ options: unknown }> }).questions[0]!.options).toEqual([{ label: 'C', recommended: true }, { label: 'A' }, { label: 'B' }]);
  });

  it('refuses no questions and more than 4', async () => {
    const { tool } = await boot();
    expect(issuesOf(tool, { questions: [] })).toContain('questions: ask at least one question');
    const q = { prompt: 'x', options: opts('a', 'b') };
    expect(issuesOf(tool, { questions: [q, q, q, q, q] })).toContain('questions: ask at most 4 questions in one call');
    expect(issuesOf(tool, {})).toMatch(/^questions: /);
  });

  it('refuses fewer than 2 and more than 6 options', async () => {
    const { tool } = await boot();
    expect(issuesOf(tool, { questions: [{ prompt: 'x', options: opts('a') }] })).toContain('questions.0.options: a question needs at least 2 options');
    expect(issuesOf(tool, { questions: [{ prompt: 'x', options: opts('a', 'b', 'c', 'd', 'e', 'f', 'g') }] })).toContain('questions.0.options: a question has at most 6 options');
  });

  it('refuses questions with different numbers of options', async () => {
    const { tool } = await boot();
    const msg = issuesOf(tool, { questions: [{ prompt: 'x', options: opts('a', 'b', 'c') }, { prompt: 'y', options: opts('a', 'b') }] });
    expect(msg).toContain('questions.1.options: every question in one call must have the same number of options: question 1 has 3, question 2 has 2');
  });

  it('refuses duplicate labels within a question (but not across questions)', async () => {
    const { tool } = await boot();
    expect(issuesOf(tool, { questions: [{ prompt: 'x', options: opts('Yes', 'yes') }] })).toContain('questions.0.options.1.label: duplicate label "yes"');
    expect(issuesOf(tool, { questions: [{ prompt: 'x', options: opts('Yes', 'No') }, { prompt: 'y', options: opts('Yes', 'No') }] })).toBe('');
  });

  it('refuses duplicate ids, including a clash with a default id', async () => {
    const { tool } = await boot();
    expect(issuesOf(tool, { questions: [{ id: 'a', prompt: 'x', options: opts('1', '2') }, { id: 'a', prompt: 'y', options: opts('1', '2') }] })).toContain('questions.1.id: duplicate question id "a"');
    expect(issuesOf(tool, { questions: [{ id: 'q2', prompt: 'x', options: opts('1', '2') }, { prompt: 'y', options: opts('1', '2') }] })).toContain('questions.1.id: duplicate question id "q2"');
  });

  it('refuses more than one recommended option', async () => {
    const { tool } = await boot();
    const msg = issuesOf(tool, { questions: [{ prompt: 'x', options: [{ label: 'a', recommended: true }, { label: 'b', recommended: true }] }] });
    expect(msg).toContain('questions.0.options: at most one option may be recommended; 2 are');
  });

  it('refuses empty prompts and labels, and a long header', async () => {
    const { tool } = await boot();
    expect(issuesOf(tool, { questions: [{ prompt: ' ', options: opts('a', 'b') }] })).toContain('questions.0.prompt: a question needs a non-empty prompt');
    expect(issuesOf(tool, { questions: [{ prompt: 'x', options: opts('a', '') }] })).toContain('questions.0.options.1.label: an option needs a non-empty label');
    expect(issuesOf(tool, { questions: [{ header: 'x'.repeat(41), prompt: 'x', options: opts('a', 'b') }] })).toContain('questions.0.header:');
  });

  it('tells the model not to add catch-all options and hides its argument deltas', async () => {
    const { tool } = await boot();
    expect(tool.description).toMatch(/Do NOT add catch-all options/);
    expect(tool.hideArgumentDeltas).toBe(true);
  });
});

describe('AskUserQuestion deadline', () => {
  it('is stamped once into the arguments, and execute and the event reuse it', async () => {
    const { tool, service } = await boot();
    const c = call(tool, one, { settings: { askUserQuestion: { timeoutMs: 60_000 } } });
    const deadline = c.prepared.__askUserQuestionDeadlineAt as number;
    expect(deadline).toBeGreaterThan(Date.now() + 50_000);
    // A second prepare (a reconnect, a replay) keeps the first stamp.
    expect(tool.prepareArguments!(c.prepared as never, c.ctx)).toEqual(c.prepared);
    expect(c.events[0]).toEqual({
      type: 'ask_user_question',
      payload: { toolCallId: c.id, conversationId: 'c_one', questions: [{ id: 'q1', prompt: 'Which database?', options: opts('Postgres', 'SQLite') }], deadlineAt: deadline, maxCustomLength: 2000 },
    });
    expect(service.pending('c_one')[0]!.deadlineAt).toBe(deadline);
    service.answer({ toolCallId: c.id, conversationId: 'c_one', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'SQLite' }]) });
    expect((await c.result).details!.deadlineAt).toBe(deadline);
  });

  it('execute counts down to the stamped deadline, not to a fresh one from the settings', async () => {
    const { tool } = await boot();
    const parsed = tool.parameters.safeParse(one);
    if (!parsed.success) throw new Error('bad args');
    const deadline = Date.now() + 30;
    const events: unknown[] = [];
    const c = call(tool, one); // only for a ToolContext; it stays pending until shutdown
    const result = await tool.execute({ ...(parsed.data as object), __askUserQuestionDeadlineAt: deadline }, {
      ...c.ctx,
      toolCallId: 'call_stamped',
      settings: { askUserQuestion: { timeoutMs: 600_000 } },
      emit: (type, payload) => void events.push({ type, payload }),
    });
    expect(result.details).toMatchObject({ timedOut: true, deadlineAt: deadline });
    expect(events[0]).toMatchObject({ type: 'ask_user_question', payload: { deadlineAt: deadline } });
  });

  it('timeout 0 or null means no deadline', async () => {
    for (const timeoutMs of [0, null]) {
      const { tool, service } = await boot({ askUserQuestion: { timeoutMs } });
      const c = call(tool, one, { settings: { askUserQuestion: { timeoutMs } } });
      expect(c.prepared.__askUserQuestionDeadlineAt).toBeNull();
      expect(service.pending()[0]!.deadlineAt).toBeNull();
    }
  });

  it('invalid settings stop the plugin at boot with the field named', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-ask-'));
    homes.push(home);
    const kernel = await createKernel({ home, plugins: [askUserQuestion], settings: { askUserQuestion: { timeoutMs: -1 } }, thirdParty: false });
    kernels.push(kernel);
    expect(kernel.failures.map((f) => f.message).join('\n')).toMatch(/askUserQuestion\.timeoutMs/);
  });
});

describe('AskUserQuestion settling', () => {
  it('an answer settles the call; the result names each choice and marks typed answers', async () => {
    const { tool, service } = await boot();
    const two = { questions: [{ header: 'DB', prompt: 'Which database?', options: opts('Postgres', 'SQLite') }, { prompt: 'Where?', options: opts('Cloud', 'Laptop') }] };
    const c = call(tool, two);
    const receipt = service.answer({ toolCallId: c.id, conversationId: 'c_one', requestJson: answerJson([{ questionId: 'q2', custom: '  on a Raspberry Pi ' }, { questionId: 'q1', selectedLabel: 'SQLite' }]) });
    expect(receipt.answers).toEqual([{ questionId: 'q1', selectedLabel: 'SQLite' }, { questionId: 'q2', custom: 'on a Raspberry Pi' }]);
    const r = await c.result;
    expect(r.isError).toBe(false);
    expect(text(r)).toContain('The user answered the questions:');
    expect(text(r)).toContain('q1 (DB) "Which database?": SQLite');
    expect(text(r)).toContain('q2 "Where?": the user typed their own answer: "on a Raspberry Pi"');
    expect(r.details).toMatchObject({ kind: 'ask_user_question', outcome: 'answered', answered: true, cancelled: false, timedOut: false, answers: receipt.answers });
    expect(c.events.map((e) => e.type)).toEqual(['ask_user_question', 'ask_user_question_settled']);
    expect(c.events[1]!.payload).toMatchObject({ toolCallId: c.id, outcome: 'answered' });
    expect(service.pending()).toEqual([]);
  });

  it('stop (the run signal) settles it as cancelled', async () => {
    const { tool } = await boot();
    const ac = new AbortController();
    const c = call(tool, one, { signal: ac.signal });
    ac.abort();
    const r = await c.result;
    expect(r.details).toMatchObject({ outcome: 'cancelled', cancelled: true, answered: false, answers: [] });
    expect(text(r)).toMatch(/did not answer: the question was cancelled \(the run was stopped\)/);
  });

  it('a timeout takes the recommended option', async () => {
    const { tool } = await boot();
    const c = call(tool, { questions: [{ prompt: 'x', options: [{ label: 'A' }, { label: 'B', recommended: true }] }] }, { settings: { askUserQuestion: { timeoutMs: 40 } } });
    const r = await c.result;
    expect(r.details).toMatchObject({ outcome: 'timedOut', timedOut: true, answers: [{ questionId: 'q1', selectedLabel: 'B' }] });
    expect(text(r)).toMatch(/did not answer within 40 ms/);
  });

  it('a timeout takes the first option when none is recommended', async () => {
    const { tool } = await boot();
    const c = call(tool, one, { settings: { askUserQuestion: { timeoutMs: 40 } } });
    expect((await c.result).details).toMatchObject({ timedOut: true, answers: [{ questionId: 'q1', selectedLabel: 'Postgres' }] });
  });

  it('the first outcome wins: a second answer is refused, a later timeout or stop changes nothing', async () => {
    const { tool, service } = await boot();
    const ac = new AbortController();
    const c = call(tool, one, { settings: { askUserQuestion: { timeoutMs: 60 } }, signal: ac.signal });
    const req = { toolCallId: c.id, conversationId: 'c_one', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'SQLite' }]) };
    service.answer(req);
    expect(() => service.answer(req)).toThrow(/already settled \(answered\)/);
    ac.abort();
    await new Promise((r) => setTimeout(r, 100));
    const r = await c.result;
    expect(r.details).toMatchObject({ outcome: 'answered', answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }] });
    expect(c.events.filter((e) => e.type === 'ask_user_question_settled')).toHaveLength(1);
  });

  it('an answer from another conversation is refused and the question stays pending', async () => {
    const { tool, service } = await boot();
    const c = call(tool, one);
    let err: unknown;
    try {
      service.answer({ toolCallId: c.id, conversationId: 'c_other', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'SQLite' }]) });
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(/does not belong to conversation "c_other"/);
    expect((err as { code: string }).code).toBe('forbidden');
    expect(service.pending('c_one').map((p) => p.toolCallId)).toEqual([c.id]);
    service.answer({ toolCallId: c.id, conversationId: 'c_one', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'SQLite' }]) });
    expect((await c.result).details).toMatchObject({ answered: true });
  });

  it('the same toolCallId in two conversations is two questions', async () => {
    const { tool, service } = await boot();
    const a = call(tool, one, { id: 'call_same', conversationId: 'c_a' });
    const b = call(tool, one, { id: 'call_same', conversationId: 'c_b' });
    service.answer({ toolCallId: 'call_same', conversationId: 'c_b', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'SQLite' }]) });
    expect((await b.result).details).toMatchObject({ answers: [{ selectedLabel: 'SQLite' }] });
    expect(service.pending().map((p) => p.conversationId)).toEqual(['c_a']);
    service.answer({ toolCallId: 'call_same', conversationId: 'c_a', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'Postgres' }]) });
    expect((await a.result).details).toMatchObject({ answers: [{ selectedLabel: 'Postgres' }] });
  });

  it('an unknown toolCallId is refused', async () => {
    const { service } = await boot();
    expect(() => service.answer({ toolCallId: 'nope', conversationId: 'c_one', requestJson: '[]' })).toThrow(/no pending question with id "nope"/);
  });

  it('choices that do not match the options are refused, naming the problem, and the question stays pending', async () => {
    const { tool, service } = await boot({ askUserQuestion: { maxCustomLength: 10 } });
    const c = call(tool, { questions: [{ prompt: 'x', options: opts('A', 'B') }, { prompt: 'y', options: opts('C', 'D') }] }, { settings: { askUserQuestion: { maxCustomLength: 10 } } });
    const refuse = (requestJson: string) => () => service.answer({ toolCallId: c.id, conversationId: 'c_one', requestJson });
    expect(refuse('not json')).toThrow(/request_json is not valid JSON/);
    expect(refuse('{"questionId":"q1"}')).toThrow(/request_json: .*array/);
    expect(refuse(answerJson([{ questionId: 'q9', selectedLabel: 'A' }, { questionId: 'q2', selectedLabel: 'C' }]))).toThrow(/unknown questionId "q9"/);
    expect(refuse(answerJson([{ questionId: 'q1', selectedLabel: 'Z' }, { questionId: 'q2', selectedLabel: 'C' }]))).toThrow(/"Z" is not an option of question "q1" \(the options are "A", "B"\)/);
    expect(refuse(answerJson([{ questionId: 'q1', selectedLabel: 'A' }]))).toThrow(/no answer for question "q2"/);
    expect(refuse(answerJson([{ questionId: 'q1', selectedLabel: 'A' }, { questionId: 'q1', selectedLabel: 'B' }]))).toThrow(/question "q1" is answered twice/);
    expect(refuse(answerJson([{ questionId: 'q1', selectedLabel: 'A', custom: 'x' }, { questionId: 'q2', selectedLabel: 'C' }]))).toThrow(/exactly one of selectedLabel or custom/);
    expect(refuse(answerJson([{ questionId: 'q1', custom: '   ' }, { questionId: 'q2', selectedLabel: 'C' }]))).toThrow(/typed answer for question "q1" is empty/);
    expect(refuse(answerJson([{ questionId: 'q1', custom: 'x'.repeat(11) }, { questionId: 'q2', selectedLabel: 'C' }]))).toThrow(/has 11 characters; at most 10/);
    expect(service.pending('c_one')).toHaveLength(1);
    service.answer({ toolCallId: c.id, conversationId: 'c_one', requestJson: answerJson([{ questionId: 'q1', custom: 'neither' }, { questionId: 'q2', selectedLabel: 'D' }]) });
    expect((await c.result).details).toMatchObject({ answers: [{ questionId: 'q1', custom: 'neither' }, { questionId: 'q2', selectedLabel: 'D' }] });
  });

  it('deleting a conversation cancels only its own pending questions', async () => {
    const { tool, service } = await boot();
    const mine = call(tool, one, { conversationId: 'c_del' });
    const other = call(tool, one, { conversationId: 'c_keep' });
    expect(service.cancelConversation('c_del')).toBe(1);
    expect((await mine.result).details).toMatchObject({ cancelled: true, reason: 'the conversation was deleted' });
    expect(service.pending().map((p) => p.toolCallId)).toEqual([other.id]);
    service.answer({ toolCallId: other.id, conversationId: 'c_keep', requestJson: answerJson([{ questionId: 'q1', selectedLabel: 'Postgres' }]) });
    expect((await other.result).details).toMatchObject({ answered: true });
  });
});

/**
 * AskUserQuestion inside a real kernel run with a scripted provider: the question appears whole
 * (no argument deltas) with its deadline at tool_execution_start, an answer through the service
 * reaches the next provider request, a short timeout takes the recommended option, stop cancels,
 * and a malformed call goes back to the model without a card.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, Plugin, ProviderRequest, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import askUserQuestion from '../../plugins/tool-ask-user-question/index.js';
import type { AskUserQuestionService } from '../../plugins/tool-ask-user-question/service.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

async function boot(steps: FakeStep[], settings: Settings = {}) {
  const provider = fakeProvider(steps);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-ask-int-'));
  homes.push(home);
  const kernel = await createKernel({ home, plugins: [plugin, askUserQuestion], settings, thirdParty: false });
  kernels.push(kernel);
  return { kernel, provider, service: kernel.services.get<AskUserQuestionService>('askUserQuestion')! };
}

const questionInput = {
  questions: [
    { header: 'DB', prompt: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite', description: 'one file', recommended: true }] },
    { header: 'Where', prompt: 'Deploy where?', options: [{ label: 'Cloud' }, { label: 'Laptop' }] },
  ],
};
const askStep: FakeStep = { toolCalls: [{ id: 'ask_1', name: 'AskUserQuestion', input: questionInput }] };

function toolResultOf(req: ProviderRequest) {
  const last = req.messages.at(-1)!;
  const block = last.content.find((b) => b.type === 'tool_result');
  if (!block || block.type !== 'tool_result') throw new Error('no tool result in the request');
  return block;
}

describe('AskUserQuestion in a run', () => {
  it('asks, takes an answer through the service, and the next request carries the choices', async () => {
    const { kernel, provider, service } = await boot([askStep, { text: 'Going with it.' }]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'set it up' }], mode: 'tools' });
    const events: LifecycleEvent[] = [];
    for await (const e of run.events) {
      events.push(e);
      if (e.type === 'ask_user_question') {
        expect(service.pending(run.conversationId).map((p) => p.toolCallId)).toEqual(['ask_1']);
        service.answer({
          toolCallId: String(e.payload.toolCallId),
          conversationId: String(e.payload.conversationId),
          requestJson: JSON.stringify([{ questionId: 'q1', selectedLabel: 'Postgres' }, { questionId: 'q2', custom: 'my own server' }]),
        });
      }
    }
    const result = await run.result;
    expect(result.status).toBe('completed');

    const start = events.find((e) => e.type === 'tool_execution_start')!;
    const asked = events.find((e) => e.type === 'ask_user_question')!;
    if (start.type !== 'tool_execution_start' || asked.type !== 'ask_user_question') throw new Error('unreachable');
    const deadline = start.args.__askUserQuestionDeadlineAt;
    expect(typeof deadline).toBe('number');
    expect(asked.payload.deadlineAt).toBe(deadline);
    // Normalized for every client: ids filled, the recommended option first.
    expect(asked.payload.questions).toEqual([
      { id: 'q1', header: 'DB', prompt: 'Which database?', options: [{ label: 'SQLite', description: 'one file', recommended: true }, { label: 'Postgres' }] },
      { id: 'q2', header: 'Where', prompt: 'Deploy where?', options: [{ label: 'Cloud' }, { label: 'Laptop' }] },
    ]);
    expect(start.args.questions).toEqual(asked.payload.questions);
    // The card appears whole: no streamed argument deltas for this call.
    expect(events.some((e) => e.type === 'message_update' && (e.delta.kind === 'tool_input' || e.delta.kind === 'tool_call_start'))).toBe(false);
    const order = events.map((e) => e.type).filter((t) => t.startsWith('tool_execution') || t.startsWith('ask_user'));
    expect(order).toEqual(['tool_execution_start', 'ask_user_question', 'ask_user_question_settled', 'tool_execution_end']);

    const tr = toolResultOf(provider.requests[1]!);
    expect(tr.isError).toBe(false);
    const text = tr.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
    expect(text).toContain('The user answered the questions:');
    expect(text).toContain('"Which database?": Postgres');
    expect(text).toContain('the user typed their own answer: "my own server"');
    // details (kind ask_user_question) drive the UI's history replay.
    const end = events.find((e) => e.type === 'tool_execution_end')!;
    if (end.type !== 'tool_execution_end') throw new Error('unreachable');
    expect(end.result.details).toMatchObject({ kind: 'ask_user_question', outcome: 'answered', answered: true, deadlineAt: deadline });
  });

  it('a short configured timeout settles with the recommended option and timedOut', async () => {
    const { kernel, provider } = await boot([askStep, { text: 'ok' }], { askUserQuestion: { timeoutMs: 50 } });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' });
    const types: string[] = [];
    for await (const e of run.events) types.push(e.type);
    expect((await run.result).status).toBe('completed');
    const tr = toolResultOf(provider.requests[1]!);
    expect(tr.details).toMatchObject({ timedOut: true, answers: [{ questionId: 'q1', selectedLabel: 'SQLite' }, { questionId: 'q2', selectedLabel: 'Cloud' }] });
    expect(tr.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('did not answer within 50 ms') });
    expect(types).toContain('ask_user_question_settled');
  });

  it('stop while the question is pending settles it as cancelled', async () => {
    const { kernel, service } = await boot([askStep, { text: 'never' }]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' });
    let end: LifecycleEvent | undefined;
    for await (const e of run.events) {
      if (e.type === 'ask_user_question') run.abort('user pressed stop');
      if (e.type === 'tool_execution_end') end = e;
    }
    const result = await run.result;
    expect(result.status).toBe('aborted');
    if (end?.type !== 'tool_execution_end') throw new Error('no tool_execution_end');
    expect(end.result.details).toMatchObject({ kind: 'ask_user_question', cancelled: true, answers: [] });
    expect(service.pending()).toEqual([]);
  });

  it('a malformed call goes back to the model as an error naming the problem, with no card', async () => {
    const bad = { questions: [{ prompt: 'x', options: [{ label: 'a' }, { label: 'b' }, { label: 'c' }] }, { prompt: 'y', options: [{ label: 'a' }, { label: 'a' }] }] };
    const { kernel, provider } = await boot([{ toolCalls: [{ id: 'ask_bad', name: 'AskUserQuestion', input: bad }] }, { text: 'fixed' }]);
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], mode: 'tools' });
    const types: string[] = [];
    for await (const e of run.events) types.push(e.type);
    expect((await run.result).status).toBe('completed');
    expect(types).not.toContain('ask_user_question');
    const tr = toolResultOf(provider.requests[1]!);
    expect(tr.isError).toBe(true);
    const text = tr.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
    expect(text).toContain('Invalid arguments for AskUserQuestion');
    expect(text).toContain('same number of options');
    expect(text).toContain('duplicate label "a"');
  });
});

/**
 * Conversation lifecycle is the runtime's: deleting a conversation (runtime.deleteConversation,
 * as the gateway and the CLI do) cancels its pending AskUserQuestion as "the conversation was
 * deleted" with no caller cancelling it first; a plain stop still says "the run was stopped".
 */
import { describe, expect, it } from 'vitest';
import type { LifecycleEvent } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import askUserQuestion from '../../plugins/tool-ask-user-question/index.js';
import type { AskUserQuestionService } from '../../plugins/tool-ask-user-question/service.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { trackResources } from '../helpers/cleanup.js';

const res = trackResources();

const ask = { questions: [{ prompt: 'Which database?', options: [{ label: 'Postgres' }, { label: 'SQLite' }] }] };

async function askAndWait() {
  const provider = fakeProvider([{ toolCalls: [{ id: 'call_q', name: 'AskUserQuestion', input: ask }] }, { text: 'ok' }]);
  const kernel = await createKernel({ home: res.tmp('la-ask-del-'), plugins: [askUserQuestion, { name: 'fake', apply: (ctx) => void ctx.registerProvider(provider) }], settings: { defaultProvider: 'fake' }, thirdParty: false });
  res.kernels.push(kernel);
  const events: LifecycleEvent[] = [];
  kernel.runtime.onEvent((e) => void events.push(e));
  const service = kernel.services.get<AskUserQuestionService>('askUserQuestion')!;
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'ask me' }], mode: 'tools' });
  const deadline = Date.now() + 10_000;
  while (!service.pending(run.conversationId).length) {
    if (Date.now() > deadline) throw new Error('the question was never asked');
    await new Promise((r) => setTimeout(r, 5));
  }
  return { kernel, run, events, service };
}

function settledOf(events: LifecycleEvent[]) {
  const settled = (events.find((e) => e.type === 'ask_user_question_settled') as { payload?: unknown } | undefined)?.payload;
  const end = events.find((e): e is Extract<LifecycleEvent, { type: 'tool_execution_end' }> => e.type === 'tool_execution_end');
  return { settled, details: end?.result.details };
}

describe('AskUserQuestion and the conversation lifecycle', () => {
  it('runtime.deleteConversation cancels the pending question as deleted, with nobody cancelling it first', async () => {
    const { kernel, run, events, service } = await askAndWait();
    expect(await kernel.runtime.deleteConversation(run.conversationId)).toBe(true);
    await run.result;
    expect(service.pending(run.conversationId)).toEqual([]);
    const { settled, details } = settledOf(events);
    expect(settled).toMatchObject({ toolCallId: 'call_q', outcome: 'cancelled', reason: 'the conversation was deleted' });
    expect(details).toMatchObject({ cancelled: true, reason: 'the conversation was deleted' });
  });

  it('stopping the run cancels it as stopped', async () => {
    const { run, events, service } = await askAndWait();
    run.abort();
    await run.result;
    expect(service.pending(run.conversationId)).toEqual([]);
    expect(settledOf(events).settled).toMatchObject({ outcome: 'cancelled', reason: 'the run was stopped' });
  });
});

/**
 * The stop cause is part of the contract: a run stopped because its conversation is deleted
 * aborts its signal with a CancelledError whose `details.reason` is `conversation_deleted`, so a
 * tool tells "deleted" from "stopped" without parsing the message; a plain stop carries none.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../../plugin-api.js';
import { CancelledError } from '../../core/define-plugin.js';
import { createKernel } from '../../core/kernel.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { trackResources } from '../helpers/cleanup.js';

const res = trackResources();

async function waitingTool() {
  let reason: unknown;
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const tool: Plugin = {
    name: 'waiter',
    apply(ctx) {
      ctx.registerTool({
        name: 'wait',
        description: 'waits until the run stops',
        parameters: z.object({}),
        execute: (_args, t) =>
          new Promise((resolve) => {
            started();
            t.signal.addEventListener('abort', () => {
              reason = t.signal.reason;
              resolve({ content: [{ type: 'text', text: 'stopped' }] });
            });
          }),
      });
    },
  };
  const provider = fakeProvider([{ toolCalls: [{ id: 'call_w', name: 'wait', input: {} }] }, { text: 'ok' }]);
  const kernel = await createKernel({ home: res.tmp('la-stop-cause-'), plugins: [tool, { name: 'fake', apply: (ctx) => void ctx.registerProvider(provider) }], settings: { defaultProvider: 'fake' }, thirdParty: false });
  res.kernels.push(kernel);
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'wait' }], mode: 'tools' });
  await running;
  return { kernel, run, reason: () => reason };
}

describe('the stop cause of a run', () => {
  it('deleteConversation aborts with a CancelledError whose details.reason is conversation_deleted', async () => {
    const { kernel, run, reason } = await waitingTool();
    await kernel.runtime.deleteConversation(run.conversationId);
    await run.result;
    expect(reason()).toBeInstanceOf(CancelledError);
    expect((reason() as CancelledError).code).toBe('cancelled');
    expect((reason() as CancelledError).details).toEqual({ reason: 'conversation_deleted' });
  });

  it('a plain stop is a CancelledError with no details.reason', async () => {
    const { run, reason } = await waitingTool();
    run.abort();
    await run.result;
    expect(reason()).toBeInstanceOf(CancelledError);
    expect((reason() as CancelledError).details?.reason).toBeUndefined();
  });
});

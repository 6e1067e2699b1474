/**
 * What the debug log records around the turn's edges, through a kernel with a scripted provider:
 * a request rebuilt after a pre-send compaction is recorded once (the one sent), a retry is an
 * attempt of the same request, a context-overflow retry is a second request of the round, a
 * reply stopped mid-block leaves its partial text, and plugin events are recorded as `custom`.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { CompactionRequest, Plugin } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import debugLogPlugin, { DEBUG_LOG_SERVICE, type DebugLogService } from '../../plugins/debug-log/index.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';
import { trackResources } from '../helpers/cleanup.js';

const t = trackResources();
type Rec = Record<string, any>;

async function boot(steps: FakeStep[], extra: Plugin[] = []) {
  const provider = fakeProvider(steps);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({
    home: t.tmp('la-debuglog-'),
    plugins: [plugin, debugLogPlugin, ...extra],
    settings: { runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 5 } },
    thirdParty: false,
    logSink: () => {},
  });
  t.kernels.push(kernel);
  const service = kernel.services.get<DebugLogService>(DEBUG_LOG_SERVICE)!;
  return { kernel, provider, service };
}

async function runOnce(b: Awaited<ReturnType<typeof boot>>, abortAfterMs?: number) {
  const handle = b.kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello' }], mode: 'agent-dev', provider: 'fake' });
  if (abortAfterMs !== undefined) setTimeout(() => handle.abort('test'), abortAfterMs);
  const result = await handle.result;
  await b.service.flush();
  const recs: Rec[] = fs.readFileSync(b.service.fileFor(result.conversationId), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { result, recs };
}

/** Compacts at the given triggers, keeping the newest user message. */
function compactor(triggers: string[]): Plugin {
  return {
    name: 'test-compactor',
    apply(ctx) {
      ctx.sessionHooks.compaction.tap((req: CompactionRequest) => {
        if (!triggers.includes(req.trigger)) return undefined;
        req.begin();
        const last = req.messages.map((m) => m.role).lastIndexOf('user');
        return {
          checkpoint: { kind: 'prune', summary: '', firstKeptMessageId: req.messages[last]!.id, coveredMessageCount: 0, prunedToolCallIds: [], ledger: { read: [], modified: [] }, tokensBefore: 10, tokensAfter: 5 },
        };
      });
    },
  };
}

describe('debug log records', () => {
  it('a request rebuilt after a pre-send compaction is recorded once, after the compaction steps', async () => {
    const b = await boot([{ text: 'ok' }], [compactor(['pre-send'])]);
    const { result, recs } = await runOnce(b);
    expect(result.status).toBe('completed');
    const kinds = recs.map((r) => r.kind);
    expect(kinds.filter((k) => k === 'provider_request')).toHaveLength(1);
    expect(recs.filter((r) => r.kind === 'compaction').map((r) => [r.payload.phase, r.round])).toEqual([
      ['start', 1],
      ['end', 1],
    ]);
    expect(kinds.indexOf('compaction')).toBeLessThan(kinds.indexOf('provider_request'));
    expect(b.provider.requests).toHaveLength(1);
  });

  it('a retry before output is a second attempt of the same request; a context overflow sends a second request in the round', async () => {
    const retry = await boot([{ error: { message: 'overloaded', code: 'overloaded', retryable: true } }, { text: 'ok' }]);
    const r1 = await runOnce(retry);
    expect(r1.recs.filter((r) => r.kind === 'provider_request')).toHaveLength(1);
    const evs = r1.recs.filter((r) => r.kind === 'provider_event');
    expect(evs.map((r) => [r.event.type, r.attempt])).toEqual([
      ['error', 1],
      ['block_start', 2],
      ['block_end', 2],
      ['usage', 2],
      ['done', 2],
    ]);
    expect(new Set(evs.map((r) => r.requestId))).toEqual(new Set([`${r1.result.runId}.1.1`]));
    expect(r1.recs.find((r) => r.kind === 'notice')).toMatchObject({ payload: { kind: 'retry', attempt: 1 } });

    const overflow = await boot([{ error: { message: 'prompt is too long', code: 'context_overflow' } }, { text: 'ok' }], [compactor(['overflow'])]);
    const r2 = await runOnce(overflow);
    expect(r2.result.status).toBe('completed');
    expect(r2.recs.filter((r) => r.kind === 'provider_request').map((r) => r.requestId)).toEqual([`${r2.result.runId}.1.1`, `${r2.result.runId}.1.2`]);
  });

  it('a reply stopped mid-block leaves one partial record with the text streamed so far', async () => {
    const b = await boot([{ hang: true, afterText: 'half a sen' }]);
    const { result, recs } = await runOnce(b, 100);
    expect(result.status).toBe('aborted');
    expect(recs.find((r) => r.partial)).toMatchObject({ kind: 'provider_event', partial: true, deltas: 1, event: { type: 'text_delta', index: 0, text: 'half a sen' } });
    expect(recs.at(-1)).toMatchObject({ kind: 'agent_end', status: 'aborted' });
  });

  it('events a plugin emits are recorded as custom, with their round and request', async () => {
    const emitter: Plugin = {
      name: 'test-emitter',
      apply(ctx) {
        ctx.registerTool({
          name: 'Ping',
          description: 'ping',
          parameters: z.object({}),
          async execute(_args, tctx) {
            tctx.emit('hook_step', { step: 'ran', hook: 'PreToolUse' });
            return { content: [{ type: 'text', text: 'pong' }] };
          },
        });
      },
    };
    const b = await boot([{ toolCalls: [{ id: 'c1', name: 'Ping', input: {} }] }, { text: 'done' }], [emitter]);
    const { result, recs } = await runOnce(b);
    expect(recs.find((r) => r.kind === 'custom')).toMatchObject({ name: 'hook_step', payload: { step: 'ran', hook: 'PreToolUse' }, round: 1, requestId: `${result.runId}.1.1` });
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { costOf } from '../../core/model-facts.js';
import { createKernel } from '../../core/kernel.js';
import catalogPlugin, { type ModelCatalog } from '../../plugins/model-catalog/index.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import { fakeProvider } from '../helpers/fake-provider.js';

describe('model catalog', () => {
  it('knows built-in models, custom-provider models, prices, and gives unknown models safe defaults with one warning', async () => {
    const warnings: string[] = [];
    const kernel = await createKernel({
      home: fs.mkdtempSync(path.join(os.tmpdir(), 'la-cat-')),
      builtins: [catalogPlugin, anthropicPlugin, { name: 'fake', apply: (ctx) => void ctx.registerProvider(fakeProvider([], 'local')) }],
      settings: { customProviders: [{ id: 'local', format: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1', models: [{ id: 'llama3', contextWindow: 8192 }] }] },
      thirdParty: false,
      logSink: (level, _s, m) => level === 'warn' && warnings.push(m),
    });
    const catalog = kernel.services.get<ModelCatalog>('modelCatalog')!;
    // One source of model facts: what the provider plugin serves (Sonnet 4.6 has a 1M window).
    expect(catalog.info('claude_code', 'claude-sonnet-4-6')).toMatchObject({ contextWindow: 1_000_000, thinking: true, known: true });
    expect(catalog.info('anthropic', 'claude-haiku-4-5')).toMatchObject({ contextWindow: 200_000, known: true });
    expect(catalog.info('claude_code', 'claude-sonnet-4-5-20250929').known).toBe(true);
    expect(catalog.info('local', 'llama3')).toMatchObject({ contextWindow: 8192, known: true });
    const unknown = catalog.info('codex', 'mystery-9');
    expect(unknown).toMatchObject({ known: false, contextWindow: 128_000 });
    catalog.info('codex', 'mystery-9');
    expect(warnings.filter((w) => w.includes('mystery-9'))).toHaveLength(1);
    // The service and the runtime answer from the same source.
    expect(kernel.runtime.modelInfo('claude_code', 'claude-sonnet-4-6')).toEqual(catalog.info('claude_code', 'claude-sonnet-4-6'));
    expect(kernel.runtime.models('local').map((m) => m.id)).toEqual(['llama3']);
    await kernel.shutdown();
  });

  it('prices every round (message_end, turn_end, the stored message) and sums the cost on agent_end; settings override a price', async () => {
    const steps = [{ toolCalls: [{ id: 'c1', name: 'Nop', input: {} }] }, { text: 'done' }];
    const provider = Object.assign(fakeProvider(steps, 'priced'), { models: [{ id: 'fake-1', price: { input: 3, output: 15, cacheRead: 0.3 } }] });
    const kernel = await createKernel({
      home: fs.mkdtempSync(path.join(os.tmpdir(), 'la-cost-')),
      builtins: [
        { name: 'priced', apply: (ctx) => void ctx.registerProvider(provider) },
        { name: 'nop', apply: (ctx) => void ctx.registerTool({ name: 'Nop', description: 'x', parameters: z.object({}), execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }) }) },
      ],
      thirdParty: false,
    });
    const run = kernel.runtime.startRun({ input: [{ type: 'text', text: 'go' }], provider: 'priced', mode: 'tools' });
    const events = [];
    for await (const e of run.events) events.push(e);
    // The fake reports 10 input and 5 output tokens a round: 10×3 + 5×15 = 105 per million.
    const perRound = 105 / 1e6;
    const ends = events.filter((e) => e.type === 'message_end');
    expect(ends.map((e) => e.type === 'message_end' && e.message.usage?.costUsd)).toEqual([perRound, perRound]);
    const turnEnd = events.find((e) => e.type === 'turn_end');
    expect(turnEnd?.type === 'turn_end' && turnEnd.usage?.costUsd).toBe(perRound);
    const agentEnd = events.find((e) => e.type === 'agent_end');
    expect(agentEnd?.type === 'agent_end' && agentEnd.usage.costUsd).toBeCloseTo(2 * perRound, 12);
    expect((await run.result).messages.find((m) => m.role === 'assistant')?.usage?.costUsd).toBe(perRound);
    await kernel.shutdown();

    // A model without prices: no cost anywhere; a custom provider's settings price it.
    const unpriced = fakeProvider([{ text: 'hi' }], 'plain');
    const k2 = await createKernel({
      home: fs.mkdtempSync(path.join(os.tmpdir(), 'la-cost-')),
      builtins: [{ name: 'plain', apply: (ctx) => void ctx.registerProvider(unpriced) }],
      thirdParty: false,
    });
    const r2 = await k2.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], provider: 'plain', mode: 'text' }).result;
    expect(r2.usage.costUsd).toBeUndefined();
    expect(costOf({ output: 1 }, { inputTokens: 1, outputTokens: 1 })).toBeUndefined();
    expect(costOf({ input: 1, output: 2, cacheWrite: 4 }, { inputTokens: 1e6, outputTokens: 1e6, cacheReadTokens: 1e6, cacheWriteTokens: 1e6 })).toBe(1 + 2 + 1 + 4);
    await k2.shutdown();
  });
});

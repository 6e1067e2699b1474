import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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
    expect(catalog.cost('claude_code', 'claude-sonnet-4-6', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBeCloseTo(18);
    expect(catalog.cost('local', 'llama3', { inputTokens: 5, outputTokens: 5 })).toBeUndefined();
    await kernel.shutdown();
  });
});

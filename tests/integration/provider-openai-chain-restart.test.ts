/**
 * Responses chaining (`store: true`) across a kernel restart: the chain lives in the
 * conversation's meta through the history service, so the first round after a restart sends
 * `previous_response_id` and only the new messages; a server that forgot the id (400
 * previous_response_not_found, or a 404 on it) gets the full input once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { createOpenAIPlugin } from '../../plugins/provider-openai/index.js';
import { CHAIN_META_KEY } from '../../plugins/provider-openai/chains.js';
import { defaultOpenAIScript, openaiError, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.js';

let server: MockOpenAI;
const homes: string[] = [];
const kernels: Kernel[] = [];
beforeAll(async () => {
  server = await startMockOpenAI();
});
beforeEach(() => server.setScript(defaultOpenAIScript));
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
});
afterAll(async () => {
  await server.close();
  for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
});

function tmpHome(): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'la-prov-chain-'));
  homes.push(h);
  return h;
}

async function boot(home: string) {
  const settings: Settings = {
    providers: { codex: { apiKey: server.apiKey, baseUrl: `${server.url}/v1`, api: 'responses', store: true } },
    runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 20, persistIntervalMs: 0 },
  };
  const kernel = await createKernel({ home, plugins: [historySqlite, createOpenAIPlugin({ env: {} })], settings, thirdParty: false });
  kernels.push(kernel);
  expect(kernel.failures).toEqual([]);
  return kernel;
}

async function runTo(kernel: Kernel, text: string, conversationId?: string) {
  const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], provider: 'codex', model: 'gpt-4.1', mode: 'text', ...(conversationId ? { conversationId } : {}) });
  for await (const _ of run.events) void _;
  const result = await run.result;
  expect(result.error).toBeUndefined();
  expect(result.status).toBe('completed');
  return run.conversationId;
}

const callsSince = (n: number) => server.responsesCalls.slice(n).map((c) => ({ prev: c.previous_response_id, input: server.requests[c.requestIndex]!.body.input as any[], id: c.responseId }));
const userText = (text: string) => ({ role: 'user', content: [{ type: 'input_text', text }] });

/** Two runs, a restart between them; returns the conversation and the id the first run stored. */
async function chainedAcrossRestart(home: string) {
  const first = await boot(home);
  const before = server.responsesCalls.length;
  const conversationId = await runTo(first, 'one');
  const [one] = callsSince(before);
  expect(one!.prev).toBeNull();
  await first.shutdown();
  return { conversationId, firstId: one!.id! };
}

describe('Responses chains after a restart', () => {
  it('the first round after a restart sends previous_response_id and only the new message', async () => {
    const home = tmpHome();
    const { conversationId, firstId } = await chainedAcrossRestart(home);
    const second = await boot(home);
    const stored = await second.services.get<{ getConversation(id: string, p?: { limit?: number }): Promise<{ meta: Record<string, any> } | undefined> }>('history')!.getConversation(conversationId, { limit: 1 });
    expect(stored!.meta[CHAIN_META_KEY]).toMatchObject({ providerId: 'codex', responseId: firstId, model: 'gpt-4.1', count: 1 });
    const before = server.responsesCalls.length;
    await runTo(second, 'two', conversationId);
    const calls = callsSince(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.prev).toBe(firstId);
    expect(calls[0]!.input).toEqual([userText('two')]);
  });

  it('a forgotten id (400 previous_response_not_found) falls back to the full input once', async () => {
    const home = tmpHome();
    const { conversationId, firstId } = await chainedAcrossRestart(home);
    server.storedResponseIds.delete(firstId); // the server lost it while we were down
    const second = await boot(home);
    const before = server.responsesCalls.length;
    await runTo(second, 'two', conversationId);
    const calls = callsSince(before);
    expect(calls.map((c) => c.prev)).toEqual([firstId, null]);
    expect(calls[1]!.input.filter((x) => x.role === 'user')).toEqual([userText('one'), userText('two')]);
    // The new chain is stored: the next round chains on the fallback's response.
    const mark = server.responsesCalls.length;
    await runTo(second, 'three', conversationId);
    expect(callsSince(mark).map((c) => c.prev)).toEqual([calls[1]!.id]);
  });

  it('a 404 on the id (a proxy that does not know it) falls back to the full input once', async () => {
    const home = tmpHome();
    const { conversationId, firstId } = await chainedAcrossRestart(home);
    server.setScript((req, i) =>
      req.body?.previous_response_id === firstId ? openaiError(404, 'invalid_request_error', `Response with id '${firstId}' not found.`) : defaultOpenAIScript(req, i),
    );
    const second = await boot(home);
    const before = server.responsesCalls.length;
    await runTo(second, 'two', conversationId);
    expect(callsSince(before).map((c) => c.prev)).toEqual([firstId, null]);
  });
});

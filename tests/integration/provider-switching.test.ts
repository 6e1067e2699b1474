/**
 * Switching provider mid-conversation: a conversation started on claude_code (thinking with a
 * signature and a tool round) continues on gemini and then on codex (Responses and Chat
 * Completions). Each request must be valid for its target: no foreign signatures or thought
 * signatures, tool calls and results paired under ids the target accepts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { echoToolPlugin } from '../helpers/echo-tool.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import providerAnthropic from '../../plugins/provider-anthropic/index.js';
import providerGemini from '../../plugins/provider-gemini/index.js';
import providerOpenAI from '../../plugins/provider-openai/index.js';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { geminiReply, geminiStream, startMockGemini, MOCK_GEMINI_KEY, type GeminiMockServer } from '../fixtures/mock-gemini.js';
import { chatCompletionReply, responsesReply, startMockOpenAI, DEFAULT_API_KEY, type MockOpenAI } from '../fixtures/mock-openai.js';

const SIGNATURE = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds_claude_sig';
// A tool-call id that is valid for Anthropic but longer than OpenAI Chat accepts (40 chars).
const CALL_ID = 'toolu_01A09q90qw90lq917835lq9_abcdefghijklmnop';

let anthropic: MockAnthropicServer;
let gemini: GeminiMockServer;
let openai: MockOpenAI;
let kernel: Kernel;

const echo = echoToolPlugin;

beforeAll(async () => {
  anthropic = await startMockAnthropic({
    script: (_req, i) =>
      i === 0
        ? anthropicReply({ thinking: { text: 'I should echo first.', signature: SIGNATURE }, toolUses: [{ id: CALL_ID, name: 'Echo', input: { text: 'ping' } }], stopReason: 'tool_use' })
        : anthropicReply({ text: 'Claude says the echo was ping.' }),
  });
  gemini = await startMockGemini({ script: () => geminiStream(geminiReply({ text: 'Gemini continues.' })) });
  openai = await startMockOpenAI({
    script: (req) =>
      req.path.startsWith('/v1/responses')
        ? { kind: 'sse', events: responsesReply({ text: 'Codex (Responses) continues.' }) }
        : { kind: 'sse', events: chatCompletionReply({ text: 'Codex (Chat) continues.', includeUsage: true }) },
  });
  kernel = await createKernel({
    home: fs.mkdtempSync(path.join(os.tmpdir(), 'la-switch-')),
    builtins: [historySqlite, providerAnthropic, providerGemini, providerOpenAI, echo],
    settings: {
      providers: {
        claude_code: { apiKey: 'k', baseUrl: anthropic.url },
        gemini: { apiKey: MOCK_GEMINI_KEY, baseUrl: gemini.url },
        codex: { apiKey: DEFAULT_API_KEY, baseUrl: `${openai.url}/v1`, api: 'responses' },
      },
      customProviders: [{ id: 'compat', format: 'openai-chat', baseUrl: `${openai.url}/v1`, apiKey: DEFAULT_API_KEY, defaultModel: 'gpt-4o-mini' }],
      runtime: { retryMaxAttempts: 1 },
    },
    thirdParty: false,
  });
});

afterAll(async () => {
  await kernel?.shutdown();
  await Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]);
});

async function run(provider: string, text: string, conversationId?: string) {
  const handle = kernel.runtime.startRun({ provider, input: [{ type: 'text', text }], mode: 'tools', ...(conversationId ? { conversationId } : {}) });
  const result = await handle.result;
  expect(result.status, JSON.stringify(result.error)).toBe('completed');
  return result;
}

describe('switching provider mid-conversation', () => {
  it('claude_code → gemini → codex (Responses) → an OpenAI-compatible Chat endpoint, each request valid for its target', async () => {
    const first = await run('claude_code', 'echo ping please');
    const id = first.conversationId;
    expect(anthropic.requests).toHaveLength(2);
    // Claude's own round trip keeps the signed thinking.
    expect(JSON.stringify(anthropic.requests[1]!.body.messages)).toContain(SIGNATURE);

    await run('gemini', 'now you, gemini', id);
    const g = gemini.requests.at(-1)!.body;
    const gText = JSON.stringify(g.contents);
    expect(gText).not.toContain(SIGNATURE);
    expect(gText).not.toContain('I should echo first.');
    expect(g.contents.map((c: { role: string }) => c.role)).toEqual(['user', 'model', 'user', 'model', 'user']);
    expect(gText).toContain('"functionCall"');
    expect(gText).toContain('"functionResponse"');
    expect(gText).toContain('echo:ping');

    await run('codex', 'now codex', id);
    const r = openai.requests.filter((q) => q.path.startsWith('/v1/responses')).at(-1)!.body;
    const items = r.input as Array<Record<string, unknown>>;
    const call = items.find((it) => it.type === 'function_call')!;
    const output = items.find((it) => it.type === 'function_call_output')!;
    expect(call.call_id).toBe(output.call_id);
    expect(JSON.stringify(items)).not.toContain(SIGNATURE);
    expect(JSON.stringify(items)).toContain('Gemini continues.');

    await run('compat', 'and a compatible endpoint', id);
    const c = openai.requests.filter((q) => q.path.startsWith('/v1/chat/completions')).at(-1)!.body;
    const assistant = c.messages.find((m: { role: string; tool_calls?: unknown[] }) => m.role === 'assistant' && m.tool_calls);
    const toolMsg = c.messages.find((m: { role: string }) => m.role === 'tool');
    const chatId = assistant.tool_calls[0].id as string;
    expect(chatId).toBe(toolMsg.tool_call_id);
    expect(chatId.length).toBeLessThanOrEqual(40);
    expect(chatId).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(c.messages)).not.toContain(SIGNATURE);
    expect(c.messages.at(-1)).toMatchObject({ role: 'user' });
  });
});

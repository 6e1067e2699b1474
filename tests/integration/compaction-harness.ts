/**
 * Shared by the compaction tests: a "model" behind the wire-faithful Anthropic mock with a tiny
 * context window (a custom provider with `models[].contextWindow`), whose usage counts the
 * request the way the real API would report it, and which answers summary requests with a
 * structured checkpoint. Not a test file itself.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LifecycleEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { builtinPlugins } from '../../hosts/builtins.js';
import { anthropicError, anthropicPromptTooLong, anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import type { MockResponse, RecordedRequest } from '../fixtures/mock-http.js';
import { collectAll } from '../helpers/streams.js';

export const KEY = 'sk-ant-compaction';
export const WINDOW = 4000;

type Body = { system?: string | Array<{ text: string }>; messages: Array<{ role: string; content: string | Array<{ type: string; text?: string; content?: unknown }> }> };
export const systemOf = (b: Body) => (typeof b.system === 'string' ? b.system : (b.system ?? []).map((p) => p.text).join('\n'));
// The last text block: the provider merges a user turn that follows a failed (empty) reply into the one before.
const textOf = (c: Body['messages'][number]['content']) => (typeof c === 'string' ? c : (c.filter((x) => x.type === 'text').at(-1)?.text ?? ''));
export const isSummaryRequest = (r: RecordedRequest) => systemOf(r.body).includes('You write context checkpoints');
const isSideRequest = (r: RecordedRequest) => systemOf(r.body).includes('You curate the long-term memory of an AI assistant.') || systemOf(r.body).includes('You name chat conversations.');
export const lastUserText = (b: Body) => textOf([...b.messages].reverse().find((m) => m.role === 'user')!.content);

/** What the summarizer answers: every section, naming each path and command it was shown. */
export function goodSummary(prompt: string, n: number): string {
  const names = [...new Set(prompt.match(/[\w./-]+\.(?:txt|ts|md)\b/g) ?? [])];
  const commands = [...prompt.matchAll(/"command":"([^"]+)"/g)].map((m) => m[1]!);
  return [
    '## Task', `- Keep counting turns (checkpoint ${n})`,
    '## Constraints', '- Answer briefly',
    '## Current state', `- Files: ${names.map((f) => `\`${f}\``).join(', ') || 'none'}`, `- Commands: ${commands.map((c) => `\`${c}\``).join(', ') || 'none'}`,
    '## Files and artifacts', '- none', '## Decisions', '- none', '## Dead ends', '- none', '## Open loops', '- none', '## Next steps', '- continue',
  ].join('\n');
}

export interface ModelScript {
  /** Replace the default answer for non-summary requests. */
  reply?(req: RecordedRequest, user: string): MockResponse | undefined;
  /** Replace the default summary answer. */
  summary?(req: RecordedRequest, n: number): MockResponse | undefined;
}

export interface Harness {
  mock: MockAnthropicServer;
  kernel: Kernel;
  home: string;
  /** Requests that were not summary requests, in order. */
  chatRequests(): RecordedRequest[];
  summaryRequests(): RecordedRequest[];
  send(text: string, conversationId?: string, mode?: 'text' | 'tools'): Promise<{ conversationId: string; events: LifecycleEvent[]; status: string; error?: string }>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A reply of about `chars` characters, with usage as the API would count this request. */
export function sized(req: RecordedRequest, text: string, pieces = 4): MockResponse {
  const input = Math.ceil(JSON.stringify({ s: req.body.system, m: req.body.messages, t: req.body.tools }).length / 4);
  const parts = Array.from({ length: pieces }, (_, i) => text.slice(Math.floor((i * text.length) / pieces), Math.floor(((i + 1) * text.length) / pieces)));
  return { kind: 'sse', events: anthropicReply({ text: parts, usage: { input_tokens: input, output_tokens: Math.ceil(text.length / 4) } }) };
}

export function providerSettings(url: string, extra: Settings = {}): Settings {
  return {
    defaultProvider: 'tiny',
    customProviders: [{ id: 'tiny', format: 'anthropic', baseUrl: url, apiKey: KEY, defaultModel: 'tiny-1', models: [{ id: 'tiny-1', contextWindow: WINDOW, maxOutputTokens: 500 }] }],
    runtime: { retryMaxAttempts: 1, retryBaseDelayMs: 1 },
    compaction: { keepRecentTokens: 600 },
    ...extra,
  };
}

export async function startHarness(script: ModelScript = {}, extra: Settings = {}, workdir?: string): Promise<Harness> {
  let summaries = 0;
  const mock = await startMockAnthropic({
    apiKey: KEY,
    script: (req) => {
      if (isSummaryRequest(req)) {
        summaries++;
        const prompt = lastUserText(req.body);
        return script.summary?.(req, summaries) ?? { kind: 'sse', events: anthropicReply({ text: goodSummary(prompt, summaries), usage: { input_tokens: 500, output_tokens: 120 } }) };
      }
      const user = lastUserText(req.body);
      const custom = script.reply?.(req, user);
      if (custom) return custom;
      if (user.startsWith('/overflow') && !systemOf(req.body).includes('context-checkpoint')) return anthropicPromptTooLong(5200, WINDOW);
      if (user.startsWith('/always-overflow')) return anthropicPromptTooLong(9000, WINDOW);
      if (user.startsWith('/summary-down')) return anthropicError(500, 'api_error', 'Internal server error');
      return sized(req, `ok ${user.slice(0, 12)} ${'reply words '.repeat(60)}`);
    },
  });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-compaction-'));
  const settings = providerSettings(mock.url, extra);
  let kernel = await createKernel({ home, builtins: await builtinPlugins(), settings, thirdParty: false });
  const h: Harness = {
    mock,
    home,
    get kernel() {
      return kernel;
    },
    // Side requests (summaries, and the memory extraction a reopened kernel resumes) are not chat rounds.
    chatRequests: () => mock.requests.filter((r) => !isSummaryRequest(r) && !isSideRequest(r)),
    summaryRequests: () => mock.requests.filter(isSummaryRequest),
    async send(text, conversationId, mode = 'text') {
      const run = kernel.runtime.startRun({ input: [{ type: 'text', text }], mode, ...(conversationId ? { conversationId } : {}), ...(workdir ? { workdir } : {}) });
      const events = await collectAll<LifecycleEvent>(run.events);
      const result = await run.result;
      return { conversationId: run.conversationId, events, status: result.status, ...(result.error ? { error: result.error.message } : {}) };
    },
    async restart() {
      await kernel.shutdown();
      kernel = await createKernel({ home, builtins: await builtinPlugins(), settings, thirdParty: false });
    },
    async close() {
      await kernel.shutdown();
      await mock.close();
    },
  } as Harness;
  return h;
}

/** A user turn of about 900 characters. */
export const turn = (n: number) => `turn ${n}: ${'some ordinary words about the task at hand '.repeat(20)}`;

export const compactions = (events: LifecycleEvent[]) => events.flatMap((e) => (e.type === 'compaction' ? [e.payload] : []));
export const contexts = (events: LifecycleEvent[]) => events.flatMap((e) => (e.type === 'context' ? [e.payload] : []));

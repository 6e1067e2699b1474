/**
 * Anthropic `pause_turn`: a reply the API paused (a long server-tool turn) is continued inside
 * the provider's stream with the documented follow-up request (the paused content appended as
 * the last assistant message), up to `maxPauseContinuations`; the kernel sees one reply.
 * A reply still paused after the last continuation ends with stopReason `max_tokens`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LifecycleEvent, ProviderEvent, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import anthropicPlugin from '../../plugins/provider-anthropic/index.js';
import { anthropicReply, checkAnthropicStream, loadAnthropicFixtureFile, type MockAnthropicServer, type SseEvent } from '../fixtures/mock-anthropic.js';
import { KEY, closeMocks, collect, errorsOf, mock, providerFor, request } from './provider-anthropic-harness.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
  await closeMocks();
});

const fixture = loadAnthropicFixtureFile('pause/pause-turn-web-search') as ReturnType<typeof loadAnthropicFixtureFile> & { continuation: SseEvent[] };
const PAUSED = fixture.events;
const CONTINUED = fixture.continuation;
const SEARCH_ID = 'srvtoolu_01PauseTurnSearch00001';

/** A paused reply with only text (no search): what a continuation past the limit keeps getting. */
const pausedText = (text: string) => anthropicReply({ text, stopReason: 'pause_turn' });

async function boot(settings: Settings): Promise<Kernel> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-prov-pause-'));
  homes.push(home);
  const kernel = await createKernel({ home, plugins: [anthropicPlugin], settings, thirdParty: false });
  kernels.push(kernel);
  return kernel;
}

const claudeAt = (s: MockAnthropicServer, more: Record<string, unknown> = {}): Settings => ({
  providers: { claude_code: { baseUrl: s.url, apiKey: KEY, webSearch: true, ...more } },
  runtime: { retryBaseDelayMs: 1, retryMaxDelayMs: 50, retryMaxAttempts: 3 },
});

async function run(kernel: Kernel) {
  const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'Quantum news?' }], mode: 'text', provider: 'claude_code' });
  const events: LifecycleEvent[] = [];
  for await (const e of handle.events) events.push(e);
  return { result: await handle.result, events, conversationId: handle.conversationId };
}

describe('the pause_turn fixture', () => {
  it('both responses follow the documented stream rules', () => {
    expect(checkAnthropicStream(PAUSED)).toEqual([]);
    expect(checkAnthropicStream(CONTINUED)).toEqual([]);
    expect(PAUSED.find((e) => e.event === 'message_delta')!.data).toMatchObject({ delta: { stop_reason: 'pause_turn' } });
  });
});

describe('pause_turn continuation in the provider stream', () => {
  it('continues to completion: the follow-up carries the paused content as the last assistant message, blocks go on at shifted indices', async () => {
    const s = await mock((_req, i) => (i === 0 ? PAUSED : CONTINUED));
    const out = await collect(providerFor(s, { webSearch: true }));
    expect(s.requests).toHaveLength(2);
    const [first, second] = s.requests.map((r) => r.body);
    // As documented: the same request, with the response's content appended as an assistant turn.
    expect(second.messages.slice(0, -1)).toEqual(first.messages);
    expect(second.messages.at(-1)).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: "I'll search for the latest quantum computing news." },
        { type: 'server_tool_use', id: SEARCH_ID, name: 'web_search', input: { query: 'latest quantum computing breakthroughs' } },
      ],
    });
    expect(second.tools).toEqual(first.tools);
    expect(second.system).toEqual(first.system);

    const ends = out.filter((e): e is Extract<ProviderEvent, { type: 'block_end' }> => e.type === 'block_end');
    expect(ends.map((e) => [e.index, e.block.type])).toEqual([[0, 'text'], [1, 'hosted_search'], [2, 'text']]);
    expect(ends[1]!.block).toMatchObject({ type: 'hosted_search', id: SEARCH_ID, status: 'completed', queries: ['latest quantum computing breakthroughs'], sources: [{ url: 'https://example.com/quantum' }] });
    // The search goes back next round as its call + result pair.
    expect((ends[1]!.block as { providerData?: { blocks: Array<{ type: string }> } }).providerData?.blocks.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result']);
    expect(out.filter((e) => e.type === 'done')).toEqual([{ type: 'done', stopReason: 'end', responseId: 'msg_01PauseTurn0000000002' }]);
    // Input is the last request's (the context); output is the whole reply's.
    expect(out.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', usage: { inputTokens: 2735, outputTokens: 41 + 58, cacheReadTokens: 0, cacheWriteTokens: 0 } }]);
  });

  it('a second pause sends both paused parts back in one assistant message', async () => {
    const s = await mock((_req, i) => (i < 2 ? pausedText(`part ${i + 1}`) : anthropicReply({ text: 'done' })));
    const out = await collect(providerFor(s));
    expect(s.requests).toHaveLength(3);
    expect(s.requests[2]!.body.messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'part 1' }, { type: 'text', text: 'part 2' }] });
    expect(out.filter((e) => e.type === 'block_start').map((e) => (e as { index: number }).index)).toEqual([0, 1, 2]);
    expect(out.at(-1)).toMatchObject({ type: 'done', stopReason: 'end' });
  });

  it('stops at maxPauseContinuations with stopReason max_tokens, and an unanswered search is not sent back', async () => {
    const s = await mock(() => PAUSED);
    const out = await collect(providerFor(s, { webSearch: true, maxPauseContinuations: 2 }));
    expect(s.requests).toHaveLength(3);
    expect(out.at(-1)).toMatchObject({ type: 'done', stopReason: 'max_tokens' });
    expect(errorsOf(out)).toEqual([]);
    const searches = out.filter((e) => e.type === 'block_end' && e.block.type === 'hosted_search').map((e) => (e as { block: Record<string, unknown> }).block);
    // The fixture repeats one call id, so the pending search ends once, failed.
    expect(searches.length).toBeGreaterThan(0);
    for (const b of searches) expect(b).toMatchObject({ status: 'failed' });
    expect(searches.every((b) => b.providerData === undefined)).toBe(true);
  });

  it('maxPauseContinuations 0 never continues', async () => {
    const s = await mock(() => pausedText('half'));
    const out = await collect(providerFor(s, { maxPauseContinuations: 0 }));
    expect(s.requests).toHaveLength(1);
    expect(out.at(-1)).toMatchObject({ type: 'done', stopReason: 'max_tokens' });
  });

  it('an abort while the continuation streams ends with one aborted error', async () => {
    const ac = new AbortController();
    const s = await mock((_req, i) => {
      if (i === 0) return PAUSED;
      // Abort once the follow-up is under way, while its events are still coming.
      setTimeout(() => ac.abort(), 40);
      return { kind: 'sse', events: CONTINUED, delayMs: 25 };
    });
    const out = await collect(providerFor(s, { webSearch: true }), request(), ac.signal);
    expect(s.requests).toHaveLength(2);
    expect(errorsOf(out)).toEqual([expect.objectContaining({ code: 'aborted', retryable: false })]);
    expect(out.some((e) => e.type === 'done')).toBe(false);
    // What the first response streamed came through before the abort.
    expect(out[0]).toEqual({ type: 'block_start', index: 0, block: { type: 'text' } });
  });

  it('an abort between the paused response and the follow-up sends no follow-up', async () => {
    const ac = new AbortController();
    const s = await mock(() => PAUSED);
    const stream = providerFor(s, { webSearch: true }).stream(request(), ac.signal);
    const out: ProviderEvent[] = [];
    for await (const e of stream) {
      out.push(e);
      if (e.type === 'block_end' && e.index === 0) ac.abort();
    }
    expect(s.requests).toHaveLength(1);
    expect(errorsOf(out)).toEqual([expect.objectContaining({ code: 'aborted' })]);
  });
});

describe('pause_turn through the kernel', () => {
  it('one assistant message holds both parts, stopReason end; the next run replays it as one turn', async () => {
    const s = await mock((_req, i) => (i === 0 ? PAUSED : i === 1 ? CONTINUED : anthropicReply({ text: 'ok' })));
    const kernel = await boot(claudeAt(s));
    const { result, conversationId } = await run(kernel);
    expect(result.status).toBe('completed');
    const replies = result.messages.filter((m) => m.role === 'assistant');
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatchObject({ stopReason: 'end' });
    expect(replies[0]!.content.map((b) => b.type)).toEqual(['text', 'hosted_search', 'text']);
    expect(replies[0]!.content[2]).toMatchObject({ text: 'Researchers demonstrated a new error-corrected logical qubit.' });

    const second = kernel.runtime.startRun({ conversationId, input: [{ type: 'text', text: 'More?' }], mode: 'text', provider: 'claude_code' });
    for await (const _ of second.events) void _;
    await second.result;
    const msgs = s.requests[2]!.body.messages as Array<{ role: string; content: Array<{ type: string }> }>;
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(msgs[1]!.content.map((b) => b.type)).toEqual(['text', 'server_tool_use', 'web_search_tool_result', 'text']);
  });

  it('the limit from settings (providers.claude_code.maxPauseContinuations) ends the reply as max_tokens', async () => {
    const s = await mock(() => pausedText('still going'));
    const kernel = await boot(claudeAt(s, { maxPauseContinuations: 1 }));
    const { result } = await run(kernel);
    expect(s.requests).toHaveLength(2);
    expect(result.status).toBe('completed');
    const reply = result.messages.find((m) => m.role === 'assistant')!;
    expect(reply).toMatchObject({ stopReason: 'max_tokens' });
    expect(reply.content).toEqual([{ type: 'text', text: 'still going' }, { type: 'text', text: 'still going' }]);
  });

  it('a custom anthropic provider continues too', async () => {
    const s = await mock((_req, i) => (i === 0 ? pausedText('a') : anthropicReply({ text: 'b' })));
    const kernel = await boot({ customProviders: [{ id: 'acme', format: 'anthropic', baseUrl: s.url, apiKey: KEY, defaultModel: 'claude-sonnet-4-6' }] } as Settings);
    const handle = kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], mode: 'text', provider: 'acme' });
    for await (const _ of handle.events) void _;
    const result = await handle.result;
    expect(s.requests).toHaveLength(2);
    expect(result.messages.find((m) => m.role === 'assistant')!.content).toEqual([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }]);
  });
});

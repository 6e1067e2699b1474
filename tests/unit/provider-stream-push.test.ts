/**
 * The provider stream's push path (ProviderStream.forEachEvent): the built-in TranslatedStream
 * delivers the same events as iterating it, stops and releases the request when the sink says
 * so, turns an SDK throw into exactly one error event, and the kernel prefers the push path
 * when a provider offers it (and still iterates one that does not).
 */
import { describe, expect, it } from 'vitest';
import type { Provider, ProviderEvent, ProviderRequest, ProviderStream } from '../../plugin-api.js';
import { consumeProviderStream } from '../../core/provider-call.js';
import { TranslatedStream, type StreamTranslator } from '../../lib/provider-shared/translated-stream.js';

/** A translator that turns raw `{ text }` chunks into a text block, and an SDK throw into an error event. */
function translator(): StreamTranslator & { end(): void; fail(err: unknown): void } {
  const out: ProviderEvent[] = [];
  let started = false;
  let failed = false;
  return {
    out,
    get failed() {
      return failed;
    },
    handle(raw) {
      if (!started) out.push({ type: 'block_start', index: 0, block: { type: 'text' } });
      started = true;
      out.push({ type: 'text_delta', index: 0, text: String(raw.text) });
    },
    end() {
      out.push({ type: 'done', stopReason: 'end' });
    },
    fail(err) {
      failed = true;
      out.push({ type: 'error', error: { code: 'network', message: (err as Error).message, retryable: true } });
    },
  };
}

/** A fake SDK stream: `n` chunks, optionally throwing after `throwAfter`; records whether it was released. */
function sdk(n: number, throwAfter?: number) {
  const state = { released: false, pulled: 0 };
  const iterator: AsyncIterator<unknown> = {
    async next() {
      if (throwAfter !== undefined && state.pulled === throwAfter) throw new Error('socket hang up');
      if (state.pulled >= n) return { value: undefined, done: true };
      return { value: { text: `c${state.pulled++}` }, done: false };
    },
    async return() {
      state.released = true;
      return { value: undefined, done: true };
    },
  };
  return { state, iterable: { [Symbol.asyncIterator]: () => iterator } };
}

function stream(n: number, throwAfter?: number) {
  const s = sdk(n, throwAfter);
  const t = translator();
  let finished = 0;
  const ts = new TranslatedStream(async () => s.iterable, t, { end: () => t.end(), fail: (e) => t.fail(e), finish: () => finished++ });
  return { ts, state: s.state, finished: () => finished };
}

async function pushAll(ts: ProviderStream, stopAt?: (ev: ProviderEvent, i: number) => boolean): Promise<ProviderEvent[]> {
  const got: ProviderEvent[] = [];
  await ts.forEachEvent!((ev) => {
    got.push(ev);
    return stopAt?.(ev, got.length - 1) ?? false;
  });
  return got;
}

describe('provider stream push path', () => {
  it('delivers exactly the events iteration yields, in order, and releases the request once', async () => {
    const a = stream(50);
    const iterated: ProviderEvent[] = [];
    for await (const ev of a.ts) iterated.push(ev);
    const b = stream(50);
    const pushed = await pushAll(b.ts);
    expect(pushed).toEqual(iterated);
    expect(pushed).toHaveLength(52);
    expect(b.finished()).toBe(1);
  });

  it('stops when the sink returns true: nothing more is delivered, the SDK stream is released', async () => {
    const s = stream(1000);
    const got = await pushAll(s.ts, (_ev, i) => i === 5);
    expect(got).toHaveLength(6);
    expect(s.state.released).toBe(true);
    expect(s.state.pulled).toBeLessThan(10);
    expect(s.finished()).toBe(1);
  });

  it('an SDK throw becomes exactly one error event after what came before, and the promise resolves', async () => {
    const s = stream(100, 3);
    const got = await pushAll(s.ts);
    expect(got.map((e) => e.type)).toEqual(['block_start', 'text_delta', 'text_delta', 'text_delta', 'error']);
    expect(s.finished()).toBe(1);
  });

  it('the kernel uses forEachEvent when a provider offers it, and iterates a plain async iterable otherwise', async () => {
    const request: ProviderRequest = { model: 'm', system: [], messages: [], tools: [] } as unknown as ProviderRequest;
    const events: ProviderEvent[] = [
      { type: 'block_start', index: 0, block: { type: 'text' } },
      { type: 'text_delta', index: 0, text: 'hi' },
      { type: 'done', stopReason: 'end' },
    ];
    const pushOnly: Provider = {
      id: 'push',
      displayName: 'Push',
      defaultModel: 'm',
      isConfigured: () => true,
      stream: () => ({
        [Symbol.asyncIterator]: () => {
          throw new Error('iterated although forEachEvent exists');
        },
        async forEachEvent(sink) {
          for (const ev of events) if (sink(ev)) return;
        },
      }),
    };
    const plain: Provider = {
      ...pushOnly,
      id: 'plain',
      async *stream() {
        yield* events;
      },
    };
    for (const provider of [pushOnly, plain]) {
      const seen: string[] = [];
      const outcome = await consumeProviderStream(provider, request, { signal: new AbortController().signal, idleMs: 10_000, hasOutput: () => seen.length > 0, onEvent: (ev) => void seen.push(ev.type) });
      expect(outcome).toEqual({});
      expect(seen).toEqual(['block_start', 'text_delta', 'done']);
    }
    // A caller that stops mid-stream stops the push path too.
    const seen: string[] = [];
    const outcome = await consumeProviderStream(pushOnly, request, { signal: new AbortController().signal, idleMs: 10_000, hasOutput: () => true, onEvent: (ev) => (seen.push(ev.type), ev.type === 'text_delta') });
    expect(outcome).toEqual({ stopped: true });
    expect(seen).toEqual(['block_start', 'text_delta']);
  });
});

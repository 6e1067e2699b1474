/**
 * The normalized provider stream over an SDK's raw one, shared by the provider plugins. A
 * translator turns each raw SDK event into zero or more normalized events (queued in `out`);
 * this class hands them out. Hand-written rather than an async generator: a generator adds a
 * promise hop per yielded event, and this sits on the per-delta path.
 */
import type { ProviderEvent, ProviderStream } from '../../plugin-api.js';
import { capRetryHint } from './retry-hints.js';

/** Turns raw SDK events into normalized ones. */
export interface StreamTranslator {
  /** Normalized events waiting to be read; the stream drains (and empties) it. */
  readonly out: ProviderEvent[];
  /** Set once an error event was queued: reading stops. */
  readonly failed: boolean;
  handle(raw: Record<string, unknown>): void;
}

/** How this provider's request ends, fails and is let go of. */
export interface StreamControl {
  /** The SDK stream ended (the translator checks it ended properly). */
  end(): void;
  /** The SDK threw (network, parse, abort): queue exactly one error event. */
  fail(err: unknown): void;
  /** Reading stopped for any reason: release the request. Called once. */
  finish?(): void;
  /**
   * The longest server retry hint (ms) a retry may honour; an error asking for more is made
   * final (see retry-hints.ts). Read once, when the SDK throws. Absent: hints pass as they are.
   */
  retryMaxDelayMs?(): number;
  /**
   * The SDK stream ended: a follow-up request that continues the same reply (Anthropic's
   * `pause_turn`), or undefined to end here. Its events go through the same translator; a
   * resolved undefined means the request could not start (the translator has the error).
   */
  resume?(): Promise<AsyncIterable<unknown> | AsyncIterator<unknown> | undefined> | undefined;
}

const DONE: IteratorResult<ProviderEvent> = { value: undefined, done: true };

export class TranslatedStream implements AsyncIterableIterator<ProviderEvent>, ProviderStream {
  private inner: AsyncIterator<unknown> | undefined;
  private read = 0;
  private ended = false;

  constructor(
    /** Open the SDK stream; undefined when the request could not start (the translator has the error). */
    private readonly start: () => Promise<AsyncIterable<unknown> | AsyncIterator<unknown> | undefined>,
    private readonly t: StreamTranslator,
    private readonly ctl: StreamControl,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ProviderEvent>> {
    return this.read < this.t.out.length ? Promise.resolve(this.take()) : this.ended ? Promise.resolve(DONE) : this.pull();
  }

  /** The next queued event, or DONE once the queue is empty and the stream ended. */
  private take(): IteratorResult<ProviderEvent> {
    const out = this.t.out;
    if (this.read >= out.length) return DONE;
    const value = out[this.read++]!;
    if (this.read === out.length) {
      out.length = 0;
      this.read = 0;
    }
    return { value, done: false };
  }

  private async open(start: () => Promise<AsyncIterable<unknown> | AsyncIterator<unknown> | undefined> = this.start): Promise<void> {
    const raw = await start();
    if (!raw) this.close();
    else this.inner = Symbol.asyncIterator in raw ? (raw as AsyncIterable<unknown>)[Symbol.asyncIterator]() : (raw as AsyncIterator<unknown>);
  }

  /** One SDK event in (or the end of the SDK stream). Synchronous: the caller awaits `next()` inline, as an async helper would add a hop per event. */
  private absorb(r: IteratorResult<unknown>): void {
    if (r.done) {
      this.ctl.end();
      this.close();
    } else this.t.handle(r.value as Record<string, unknown>);
    if (this.t.failed) this.close();
  }

  private async pull(): Promise<IteratorResult<ProviderEvent>> {
    const t = this.t;
    try {
      if (!this.inner) await this.open();
      while (!this.ended) {
        const r = await this.inner!.next();
        // Checked only at the end of an SDK stream, never per event.
        if (r.done && (await this.resumed())) continue;
        this.absorb(r);
        if (t.out.length) break;
      }
    } catch (err) {
      this.failWith(err);
    }
    // A plain value, not this.next(): returning a promise from an async function costs extra ticks per event.
    return this.take();
  }

  /**
   * The push path (ProviderStream.forEachEvent): every event goes to `sink` as soon as it is
   * translated, one await per SDK event and none per normalized one. `sink` returning true
   * stops reading and releases the request.
   */
  async forEachEvent(sink: (event: ProviderEvent) => boolean | void): Promise<void> {
    const deliver = (): boolean => {
      const out = this.t.out;
      let stop = false;
      while (!stop && this.read < out.length) stop = sink(out[this.read++]!) === true;
      out.length = 0;
      this.read = 0;
      if (stop) this.close();
      return stop;
    };
    try {
      if (deliver()) return;
      if (!this.inner && !this.ended) await this.open();
      while (!this.ended) {
        const r = await this.inner!.next();
        if (r.done && (await this.resumed())) {
          if (deliver()) return;
          continue;
        }
        this.absorb(r);
        if (deliver()) return;
      }
    } catch (err) {
      this.failWith(err);
    }
    deliver();
  }

  /** True when the control continued the reply with a new SDK stream (or queued why it could not). */
  private async resumed(): Promise<boolean> {
    const next = this.ctl.resume?.();
    if (!next) return false;
    this.inner = undefined;
    await this.open(() => next);
    return true;
  }

  /** The SDK threw: exactly one error event queued (its retry hint capped), and reading stops. */
  private failWith(err: unknown): void {
    const t = this.t;
    const queued = t.out.length;
    this.ctl.fail(err);
    // Only a thrown HTTP error carries a hint (headers / error details); in-stream errors never do.
    if (this.ctl.retryMaxDelayMs) {
      for (let i = queued; i < t.out.length; i++) {
        const ev = t.out[i]!;
        if (ev.type === 'error' && ev.error.retryAfterMs !== undefined) t.out[i] = { type: 'error', error: capRetryHint(ev.error, this.ctl.retryMaxDelayMs()) };
      }
    }
    this.close();
  }

  /** Stop reading: returning the SDK's iterator early makes it abort the request. */
  private close(): void {
    if (this.ended) return;
    this.ended = true;
    void this.inner?.return?.()?.catch(() => undefined);
    this.ctl.finish?.();
  }

  async return(): Promise<IteratorResult<ProviderEvent>> {
    this.close();
    this.t.out.length = 0;
    return DONE;
  }
}

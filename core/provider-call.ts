/**
 * One provider stream, consumed with the kernel's guards: an idle watchdog, abort from outside,
 * a caller that may stop it early (the mid-stream compaction budget), and a race that keeps a
 * provider which ignores its signal from hanging the caller. The retry policy lives here too,
 * so runs and one-off completions (`runtime.complete`) retry the same way.
 *
 * Every listener added to an outside signal is removed before returning: a long-lived run
 * signal must not collect one listener (and one closure over the request) per round.
 */
import type { Provider, ProviderErrorInfo, ProviderEvent, ProviderRequest, ProviderStream, RuntimeSettings } from '../plugin-api.js';

export interface ConsumeOptions {
  /** The run's (or caller's) signal. */
  signal: AbortSignal;
  /** A stream silent this long ends with a timeout error. */
  idleMs: number;
  /** Called for every event; return true to stop the stream here (no error). */
  onEvent(ev: ProviderEvent): boolean | void;
  /** Whether output has arrived (a timeout after output cannot be retried). */
  hasOutput(): boolean;
}

export interface ConsumeOutcome {
  error?: ProviderErrorInfo;
  /** The caller's onEvent asked to stop. */
  stopped?: boolean;
}

export async function consumeProviderStream(provider: Provider, request: ProviderRequest, o: ConsumeOptions): Promise<ConsumeOutcome> {
  const inner = new AbortController();
  const onOuterAbort = () => inner.abort(o.signal.reason);
  if (o.signal.aborted) inner.abort(o.signal.reason);
  else o.signal.addEventListener('abort', onOuterAbort, { once: true });
  const signal = inner.signal;
  let lastEventAt = Date.now();
  let timedOut = false;
  const timer = setInterval(() => {
    if (Date.now() - lastEventAt > o.idleMs) {
      timedOut = true;
      inner.abort();
    }
  }, Math.max(10, Math.min(1000, o.idleMs / 4)));
  let error: ProviderErrorInfo | undefined;
  let stopped = false;
  let finished = false;
  let resolveStopped!: () => void;
  const aborted = new Promise<void>((resolve) => (resolveStopped = resolve));
  if (signal.aborted) resolveStopped();
  else signal.addEventListener('abort', resolveStopped, { once: true });
  // True: stop reading here.
  const deliver = (ev: ProviderEvent): boolean => {
    lastEventAt = Date.now();
    if (signal.aborted || finished) return true;
    if (o.onEvent(ev) === true) {
      stopped = true;
      inner.abort();
      return true;
    }
    if (ev.type === 'error') {
      error = ev.error;
      return true;
    }
    return false;
  };
  const read = async () => {
    try {
      const stream = provider.stream(request, signal) as ProviderStream;
      // The push path saves a promise hop or two per event (most events are deltas).
      if (typeof stream.forEachEvent === 'function') await stream.forEachEvent(deliver);
      else for await (const ev of stream) if (deliver(ev)) break;
    } catch (err) {
      // Contract breach (providers must not throw), still handled as a stream error.
      error = { code: 'stream', message: err instanceof Error ? err.message : String(err), retryable: false };
    }
  };
  try {
    await Promise.race([read(), aborted]);
  } finally {
    finished = true;
    clearInterval(timer);
    o.signal.removeEventListener('abort', onOuterAbort);
    signal.removeEventListener('abort', resolveStopped);
  }
  if (timedOut && !o.signal.aborted) error = { code: 'timeout', message: `the stream was silent for more than ${o.idleMs} ms`, retryable: !o.hasOutput() };
  if (stopped) return { stopped: true };
  return error ? { error } : {};
}

/**
 * How long to wait before retrying a failed attempt, or undefined when it must not be retried:
 * only retryable errors before any output (a retry after output would duplicate persisted text),
 * with exponential backoff and jitter, or the server's retry-after, capped.
 */
export function retryDelayMs(err: ProviderErrorInfo, attempt: number, hadOutput: boolean, rt: RuntimeSettings | undefined): number | undefined {
  const maxAttempts = rt?.retryMaxAttempts ?? 4;
  if (!err.retryable || hadOutput || attempt >= maxAttempts) return undefined;
  const baseDelay = rt?.retryBaseDelayMs ?? 1000;
  // 60 s: a per-minute rate limit (Gemini asks for 26-60 s) is waited out, not failed.
  const maxDelay = rt?.retryMaxDelayMs ?? 60_000;
  const backoff = Math.min(maxDelay, baseDelay * 2 ** (attempt - 1));
  return err.retryAfterMs !== undefined ? Math.min(maxDelay, err.retryAfterMs) : backoff / 2 + Math.random() * (backoff / 2);
}

/** Provider settings as request options, without credentials: taps (and their logs) never see keys. */
export function requestOptions(settings: Record<string, unknown> | undefined): Record<string, never> {
  if (!settings) return NO_OPTIONS;
  // Settings are replaced, never mutated: one options object per section keeps the provider's
  // validation of it cached (by identity) instead of re-run every round.
  let options = optionsBySection.get(settings);
  if (!options) {
    const { apiKey: _key, apiKeyEnv: _keyEnv, ...rest } = settings;
    optionsBySection.set(settings, (options = Object.freeze(rest) as Record<string, never>));
  }
  return options;
}
const NO_OPTIONS: Record<string, never> = Object.freeze({});
const optionsBySection = new WeakMap<object, Record<string, never>>();

/**
 * One HTTP hook: the event as a JSON body (POST by default), aborted at the timeout whether the
 * server never answers, answers slowly, or trickles its body. The response body is read up to
 * a byte limit (a decision is small).
 */
export interface HttpHookOptions {
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
}

export interface HttpHookOutcome {
  kind: 'http';
  /** The response status, when one came. */
  status?: number;
  body: string;
  timedOut: boolean;
  aborted: boolean;
  /** Why no (complete) response came: connection refused, DNS, ... */
  error?: string;
  durationMs: number;
}

async function readCapped(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept + value.length > limit) {
      chunks.push(value.subarray(0, limit - kept));
      kept = limit;
      await reader.cancel().catch(() => {});
      break;
    }
    chunks.push(value);
    kept += value.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function runHttpHook(o: HttpHookOptions): Promise<HttpHookOutcome> {
  const started = Date.now();
  // One controller for the timeout and the caller's signal, with every listener removed at the
  // end: hooks run by the thousand on one long-lived signal.
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctl.abort();
  }, o.timeoutMs);
  const onAbort = () => ctl.abort();
  if (o.signal?.aborted) ctl.abort();
  else o.signal?.addEventListener('abort', onAbort, { once: true });
  const base = { kind: 'http' as const, timedOut: false, aborted: false };
  let status: number | undefined;
  try {
    const res = await fetch(o.url, {
      method: o.method,
      headers: { 'content-type': 'application/json', 'user-agent': 'liveagent-hooks', ...o.headers },
      body: o.body,
      signal: ctl.signal,
      redirect: 'follow',
    });
    status = res.status;
    const body = await readCapped(res, o.maxOutputBytes);
    return { ...base, status, body, durationMs: Date.now() - started };
  } catch (err) {
    const aborted = !timedOut && !!o.signal?.aborted;
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = timedOut ? `no answer within ${o.timeoutMs} ms` : aborted ? 'stopped' : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { ...base, ...(status !== undefined ? { status } : {}), body: '', timedOut, aborted, error: why, durationMs: Date.now() - started };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

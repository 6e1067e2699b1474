/**
 * Running one task: a prompt becomes a run of the runtime (in a new conversation, or appended to
 * a named one), a bash command runs in its own process group with the Bash tool's process
 * handling (the whole tree is stopped on timeout or shutdown, output kept head and tail), an
 * HTTP request is a fetch with a timeout. Nothing here throws: every failure is an outcome.
 */
import type { Logger, RuntimeApi } from '../../plugin-api.js';
import { runCommand } from '../../lib/tool-shared/run-command.js';
import type { HostProcesses } from '../../lib/tool-shared/process-records.js';
import type { CronSettings } from './settings.js';
import type { BashAction, CronTask, HttpAction, PromptAction } from './task-spec.js';

export interface ExecContext {
  runtime: RuntimeApi;
  settings: CronSettings;
  /** Working directory when a task names none. */
  home: string;
  records?: HostProcesses;
  /** Aborted when the host stops. */
  signal: AbortSignal;
  logger: Logger;
  /** A prompt run's conversation is known (before the run ends). */
  onConversation?(conversationId: string): void;
}

export interface ExecOutcome {
  status: 'done' | 'failed';
  output: string;
  error?: string;
  conversationId?: string;
}

/** The start of `text`, at most `limit` bytes of UTF-8, marked when cut. */
export function capText(text: string, limit: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= limit) return text;
  // toString drops a character cut in half as U+FFFD; trim it.
  return `${buf.subarray(0, limit).toString('utf8').replace(/\uFFFD$/, '')}\n[… ${buf.length - limit} more bytes not kept]`;
}

function timeoutOf(task: { timeoutMs?: number | undefined }, def: number, max: number): number {
  return Math.min(task.timeoutMs ?? def, max);
}

export async function executeTask(task: CronTask, ctx: ExecContext): Promise<ExecOutcome> {
  try {
    switch (task.action.kind) {
      case 'prompt':
        return await runPrompt(task.action, ctx);
      case 'bash':
        return await runBash(task.action, ctx);
      case 'http':
        return await runHttp(task.action, ctx);
    }
  } catch (err) {
    return { status: 'failed', output: '', error: (err as Error)?.message ?? String(err) };
  }
}

async function runPrompt(a: PromptAction, ctx: ExecContext): Promise<ExecOutcome> {
  const timeoutMs = timeoutOf(a, ctx.settings.promptTimeoutMs, ctx.settings.maxTimeoutMs);
  const handle = ctx.runtime.startRun({
    ...(a.conversationId ? { conversationId: a.conversationId } : {}),
    input: [{ type: 'text', text: a.prompt }],
    ...(a.mode ? { mode: a.mode } : {}),
    ...(a.provider ? { provider: a.provider } : {}),
    ...(a.model ? { model: a.model } : {}),
    ...(a.workdir ? { workdir: a.workdir } : {}),
    signal: ctx.signal,
    keepEvents: false,
  });
  ctx.onConversation?.(handle.conversationId);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    handle.abort('timeout');
  }, timeoutMs);
  timer.unref();
  const result = await handle.result.finally(() => clearTimeout(timer));
  const reply = result.messages
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])))
    .join('');
  const output = capText(reply, ctx.settings.outputLimitBytes);
  if (result.status === 'completed') return { status: 'done', output, conversationId: result.conversationId };
  const error = timedOut ? `timed out after ${timeoutMs} ms` : result.status === 'aborted' ? 'stopped (the host shut down or the run was stopped)' : (result.error?.message ?? 'the run failed');
  return { status: 'failed', output, error, conversationId: result.conversationId };
}

async function runBash(a: BashAction, ctx: ExecContext): Promise<ExecOutcome> {
  const timeoutMs = timeoutOf(a, ctx.settings.bashTimeoutMs, ctx.settings.maxTimeoutMs);
  const r = await runCommand(a.command, {
    cwd: a.workdir ?? ctx.home,
    timeoutMs,
    signal: ctx.signal,
    settings: {
      defaultTimeoutMs: timeoutMs,
      maxTimeoutMs: timeoutMs,
      outputLimitBytes: ctx.settings.outputLimitBytes,
      killGraceMs: ctx.settings.killGraceMs,
      progressIntervalMs: 0,
      exitDrainMs: 200,
    },
    ...(ctx.records ? { records: ctx.records } : {}),
  });
  const output = r.omittedBytes > 0 ? `${r.output}\n[${r.omittedBytes} bytes of output omitted]` : r.output;
  if (r.spawnError) return { status: 'failed', output, error: `could not start bash: ${r.spawnError}` };
  if (r.timedOut) return { status: 'failed', output, error: `timed out after ${timeoutMs} ms (the process tree was stopped)` };
  if (r.aborted) return { status: 'failed', output, error: 'stopped: the host shut down' };
  if (r.exitCode !== 0) return { status: 'failed', output, error: r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}` };
  return { status: 'done', output };
}

async function runHttp(a: HttpAction, ctx: ExecContext): Promise<ExecOutcome> {
  const timeoutMs = timeoutOf(a, ctx.settings.httpTimeoutMs, ctx.settings.maxTimeoutMs);
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([timeout, ctx.signal]);
  const method = a.method ?? 'GET';
  try {
    const res = await fetch(a.url, { method, ...(a.headers ? { headers: a.headers } : {}), ...(a.body !== undefined && method !== 'GET' && method !== 'HEAD' ? { body: a.body } : {}), signal, redirect: 'follow' });
    const body = await readCapped(res, ctx.settings.outputLimitBytes);
    const output = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}\n${body}`;
    return res.ok ? { status: 'done', output } : { status: 'failed', output, error: `HTTP ${res.status}` };
  } catch (err) {
    if (timeout.aborted) return { status: 'failed', output: '', error: `timed out after ${timeoutMs} ms` };
    if (ctx.signal.aborted) return { status: 'failed', output: '', error: 'stopped: the host shut down' };
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    return { status: 'failed', output: '', error: `${method} ${a.url} failed: ${(err as Error).message}${cause ? ` (${cause})` : ''}` };
  }
}

/** The start of a response body, reading no more than `limit` bytes (the rest is cancelled). */
async function readCapped(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let more = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    if (size > limit) {
      more = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  const all = Buffer.concat(chunks);
  const text = all.subarray(0, limit).toString('utf8');
  return more ? `${text.replace(/\uFFFD$/, '')}\n[… body cut at ${limit} bytes]` : text;
}

/** How scheduled tasks and their runs read on the Scheduled page. */
import type { CronAction, CronTask, RunStatus } from '../stores/cron.js';

/** A fire time in the task's time zone; seconds only when the time has some. */
export function formatFireTime(ts: number, timeZone?: string): string {
  const opts: Intl.DateTimeFormatOptions = { weekday: 'short', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
  if (ts % 60_000 !== 0) opts.second = '2-digit';
  try {
    return new Intl.DateTimeFormat(undefined, { ...opts, ...(timeZone ? { timeZone } : {}) }).format(ts);
  } catch {
    return new Intl.DateTimeFormat(undefined, opts).format(ts);
  }
}

/** A run's times in the browser's zone, with seconds (runs are seconds apart at the fastest). */
export function formatRunTime(ts: number | null): string {
  if (ts === null) return '—';
  return new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(ts);
}

export function createdByLabel(by: CronTask['createdBy']): string {
  return by === 'model' ? 'created by the model' : by === 'cli' ? 'created by you (CLI)' : by === 'api' ? 'created through the API' : 'created by you';
}

export const STATUS_CLASS: Record<RunStatus, string> = { pending: 'pending', running: 'running', done: 'ok', failed: 'error', skipped: 'warn', missed: 'warn' };

/** One line saying what a run does. */
export function actionSummary(a: CronAction): string {
  const text = a.kind === 'prompt' ? a.prompt : a.kind === 'bash' ? a.command : `${a.method ?? 'GET'} ${a.url}`;
  const line = text.split('\n')[0]!.trim();
  return line.length > 90 ? `${line.slice(0, 87)}…` : line;
}

/** The start of a run's output (the history shows an excerpt; the whole is in the title). */
export function excerpt(text: string | null, max = 400): string {
  if (!text) return '';
  const t = text.trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

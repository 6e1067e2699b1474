/**
 * The add/edit form of a scheduled task as flat strings (what the inputs bind to), and its
 * conversion to the gateway's TaskInput / TaskPatch. Empty optional fields are left out so the
 * server's defaults apply; the server validates everything and its message is shown as it says.
 */
import type { CronAction, CronTask } from '../stores/cron.js';

export type TaskKind = CronAction['kind'];

export interface CronForm {
  name: string;
  kind: TaskKind;
  prompt: string;
  mode: '' | 'text' | 'tools' | 'agent-dev';
  conversationId: string;
  /** Kept from the task being edited (the form has no field for them), so saving does not drop them. */
  provider: string;
  model: string;
  command: string;
  workdir: string;
  url: string;
  method: string;
  /** One `Name: value` a line. */
  headers: string;
  body: string;
  timeoutMs: string;
  schedule: string;
  timezone: string;
  missed: 'skip' | 'once';
  overlap: 'skip' | 'allow';
  maxExecutions: string;
  enabled: boolean;
}

export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

export function emptyForm(): CronForm {
  return {
    name: '', kind: 'prompt', prompt: '', mode: '', conversationId: '', provider: '', model: '', command: '', workdir: '', url: '', method: 'GET',
    headers: '', body: '', timeoutMs: '', schedule: '0 9 * * *', timezone: hostTimeZone(), missed: 'skip', overlap: 'skip',
    maxExecutions: '', enabled: true,
  };
}

export function formOf(t: CronTask): CronForm {
  const f = emptyForm();
  const a = t.action;
  Object.assign(f, {
    name: t.name, kind: a.kind, schedule: t.schedule, timezone: t.timezone, missed: t.missed, overlap: t.overlap,
    maxExecutions: t.maxExecutions === null ? '' : String(t.maxExecutions), enabled: t.enabled,
    timeoutMs: a.timeoutMs === undefined ? '' : String(a.timeoutMs),
  });
  if (a.kind === 'prompt') Object.assign(f, { prompt: a.prompt, mode: a.mode ?? '', conversationId: a.conversationId ?? '', workdir: a.workdir ?? '', provider: a.provider ?? '', model: a.model ?? '' });
  else if (a.kind === 'bash') Object.assign(f, { command: a.command, workdir: a.workdir ?? '' });
  else {
    const headers = Object.entries(a.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n');
    Object.assign(f, { url: a.url, method: a.method ?? 'GET', headers, body: a.body ?? '' });
  }
  return f;
}

/** A one-line reason the form cannot be sent yet, or null (the server checks the rest). */
export function formProblem(f: CronForm): string | null {
  if (!f.schedule.trim()) return 'The schedule is empty';
  if (f.kind === 'prompt' && !f.prompt.trim()) return 'The prompt is empty';
  if (f.kind === 'bash' && !f.command.trim()) return 'The command is empty';
  if (f.kind === 'http' && !f.url.trim()) return 'The URL is empty';
  if (f.timeoutMs.trim() && !/^\d+$/.test(f.timeoutMs.trim())) return 'The timeout must be a whole number of milliseconds';
  if (f.maxExecutions.trim() && !/^[1-9]\d*$/.test(f.maxExecutions.trim())) return 'Max runs must be a whole number of at least 1';
  const bad = headerLines(f.headers).find((l) => !/^[^:\s][^:]*:/.test(l));
  if (bad) return `Header "${bad}" is not "Name: value"`;
  return null;
}

function headerLines(text: string): string[] {
  return text.split('\n').map((l) => l.trim()).filter(Boolean);
}

function actionOf(f: CronForm): CronAction {
  const opt = <K extends string>(key: K, v: string) => (v.trim() ? ({ [key]: v.trim() } as Record<K, string>) : {});
  const timeout = f.timeoutMs.trim() ? { timeoutMs: Number(f.timeoutMs.trim()) } : {};
  if (f.kind === 'prompt') {
    return { kind: 'prompt', prompt: f.prompt, ...(f.mode ? { mode: f.mode } : {}), ...opt('provider', f.provider), ...opt('model', f.model), ...opt('workdir', f.workdir), ...opt('conversationId', f.conversationId), ...timeout };
  }
  if (f.kind === 'bash') return { kind: 'bash', command: f.command, ...opt('workdir', f.workdir), ...timeout };
  const lines = headerLines(f.headers);
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).trim(), l.slice(l.indexOf(':') + 1).trim()]));
  return { kind: 'http', url: f.url.trim(), method: f.method, ...(lines.length ? { headers } : {}), ...(f.body ? { body: f.body } : {}), ...timeout };
}

/** What cron.add takes. */
export function inputOf(f: CronForm): Record<string, unknown> {
  return {
    ...(f.name.trim() ? { name: f.name.trim() } : {}),
    schedule: f.schedule.trim(),
    ...(f.timezone.trim() ? { timezone: f.timezone.trim() } : {}),
    action: actionOf(f),
    enabled: f.enabled,
    missed: f.missed,
    overlap: f.overlap,
    ...(f.maxExecutions.trim() ? { maxExecutions: Number(f.maxExecutions.trim()) } : {}),
  };
}

/** What cron.update takes: every field (the action is replaced whole), no limit as null. */
export function patchOf(f: CronForm): Record<string, unknown> {
  const input = inputOf(f);
  return { ...input, maxExecutions: input.maxExecutions ?? null };
}

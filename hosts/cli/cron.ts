/**
 * `liveagent cron add|list|rm|runs|enable|disable`: scheduled tasks. Works on the cron database
 * directly (no kernel boots; PostgreSQL when a PostgreSQL URL is configured, as `serve` decides),
 * so it works with or without a running `serve`; a running serve
 * picks the change up at its next poll (`cron.pollIntervalMs`). A bad expression, time zone or
 * flag exits 2 with one line saying why; `add` prints the next fire times of a valid one.
 */
import { z } from 'zod';
import { resolvePaths } from '../../core/paths.js';
import { readSettingsFile } from '../../core/settings.js';
import { configuredPostgresUrl } from '../../lib/database/url.js';
import { cronSettings } from '../../plugins/cron/settings.js';
import { CronTasks, CronTaskError, openCronStore, type CronTaskView } from '../../plugins/cron/tasks.js';
import { issueText, TaskInputSchema, type CronRun } from '../../plugins/cron/task-spec.js';
import { CliUsageError, checkWorkdir, strictParse } from './args.js';
import { EXIT } from './exit-codes.js';

export interface CronIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const SUBCOMMANDS = 'add, list, rm, runs, enable, disable';

const AddFlags = z.object({
  schedule: z.string({ error: () => '--schedule EXPR is required (a 5- or 6-field cron expression, or an ISO time)' }),
  prompt: z.string().optional(),
  bash: z.string().optional(),
  http: z.string().optional(),
  name: z.string().optional(),
  tz: z.string().optional(),
  conversation: z.string().optional(),
  missed: z.string().optional(),
  overlap: z.string().optional(),
  mode: z.string().optional(),
  provider: z.string().optional(),
  model: z.string().optional(),
  workdir: z.string().optional(),
  method: z.string().optional(),
  header: z.array(z.string()).optional(),
  body: z.string().optional(),
  'max-runs': z.string().optional(),
  timeout: z.string().optional(),
  disabled: z.boolean().optional(),
  json: z.boolean().optional(),
});

function positiveInt(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliUsageError(`--${flag} must be a whole number of at least 1, got "${v}"`);
  return n;
}

/** The task the flags describe; its values are validated by CronTasks.add (the same checks as the tool and the gateway). */
function addInput(argv: string[]): { input: Record<string, unknown>; json: boolean } {
  const { values, positionals } = strictParse(argv, {
    schedule: { type: 'string' },
    prompt: { type: 'string' },
    bash: { type: 'string' },
    http: { type: 'string' },
    name: { type: 'string' },
    tz: { type: 'string' },
    conversation: { type: 'string' },
    missed: { type: 'string' },
    overlap: { type: 'string' },
    mode: { type: 'string' },
    provider: { type: 'string' },
    model: { type: 'string' },
    workdir: { type: 'string' },
    method: { type: 'string' },
    header: { type: 'string', multiple: true },
    body: { type: 'string' },
    'max-runs': { type: 'string' },
    timeout: { type: 'string' },
    disabled: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
  const r = AddFlags.safeParse(values);
  if (!r.success) throw new CliUsageError(r.error.issues[0]!.message);
  const f = r.data;
  const kinds = [f.prompt !== undefined && '--prompt', f.bash !== undefined && '--bash', f.http !== undefined && '--http'].filter(Boolean);
  if (kinds.length !== 1) throw new CliUsageError(kinds.length ? `give only one of ${kinds.join(', ')}` : 'one of --prompt TEXT, --bash CMD or --http URL is required');
  const only = (flags: Array<keyof typeof f>, kind: string) => {
    for (const flag of flags) if (f[flag] !== undefined) throw new CliUsageError(`--${flag} applies to ${kind} tasks only`);
  };
  const timeout = positiveInt('timeout', f.timeout);
  const common = timeout !== undefined ? { timeoutMs: timeout } : {};
  let action: Record<string, unknown>;
  if (f.prompt !== undefined) {
    only(['method', 'header', 'body'], '--http');
    action = {
      kind: 'prompt',
      prompt: f.prompt,
      workdir: checkWorkdir(f.workdir ?? process.cwd()),
      ...(f.mode !== undefined ? { mode: f.mode } : {}),
      ...(f.provider !== undefined ? { provider: f.provider } : {}),
      ...(f.model !== undefined ? { model: f.model } : {}),
      ...(f.conversation !== undefined ? { conversationId: f.conversation } : {}),
      ...common,
    };
  } else {
    only(['mode', 'provider', 'model', 'conversation'], '--prompt');
    if (f.bash !== undefined) {
      only(['method', 'header', 'body'], '--http');
      action = { kind: 'bash', command: f.bash, workdir: checkWorkdir(f.workdir ?? process.cwd()), ...common };
    } else {
      only(['workdir'], '--prompt and --bash');
      const headers: Record<string, string> = {};
      for (const h of f.header ?? []) {
        const at = h.indexOf(':');
        if (at < 1) throw new CliUsageError(`--header must look like "Name: value", got "${h}"`);
        headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
      }
      action = {
        kind: 'http',
        url: f.http,
        ...(f.method !== undefined ? { method: f.method.toUpperCase() } : {}),
        ...(f.header?.length ? { headers } : {}),
        ...(f.body !== undefined ? { body: f.body } : {}),
        ...common,
      };
    }
  }
  const maxRuns = positiveInt('max-runs', f['max-runs']);
  const input: Record<string, unknown> = {
    schedule: f.schedule,
    action,
    ...(f.name !== undefined ? { name: f.name } : {}),
    ...(f.tz !== undefined ? { timezone: f.tz } : {}),
    ...(f.missed !== undefined ? { missed: f.missed } : {}),
    ...(f.overlap !== undefined ? { overlap: f.overlap } : {}),
    ...(maxRuns !== undefined ? { maxExecutions: maxRuns } : {}),
    ...(f.disabled ? { enabled: false } : {}),
  };
  return { input, json: !!f.json };
}

/** `2026-07-01 09:00:00` in the task's zone. */
function local(t: number | null | undefined, tz: string): string {
  if (!t) return '-';
  return new Intl.DateTimeFormat('sv-SE', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }).format(new Date(t));
}

function kindOf(t: CronTaskView): string {
  return t.action.kind === 'http' ? `http ${t.action.method ?? 'GET'}` : t.action.kind;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

const oneLine = (s: string | null, max = 60) => {
  const l = (s ?? '').replace(/\s+/g, ' ').trim();
  return l.length > max ? `${l.slice(0, max - 1)}…` : l;
};

function printRuns(io: CronIo, tz: string, runs: CronRun[], json: boolean): void {
  if (json) {
    for (const r of runs) io.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  if (!runs.length) return void io.stdout.write('no runs yet\n');
  const rows = [['RUN', 'STATUS', 'SCHEDULED', 'FINISHED', 'RESULT']];
  for (const r of runs) {
    const result = [r.conversationId ? `conversation ${r.conversationId}` : '', r.error ? `error: ${r.error}` : '', oneLine(r.output)].filter(Boolean).join('; ');
    rows.push([String(r.id), r.status, local(r.scheduledAt, tz), local(r.finishedAt, tz), oneLine(result, 100)]);
  }
  io.stdout.write(table(rows));
}

function single(argv: string[], what: string, extra: Record<string, { type: 'string' | 'boolean' }> = {}) {
  const { values, positionals } = strictParse(argv, { json: { type: 'boolean' }, ...extra });
  if (positionals.length !== 1) throw new CliUsageError(`${what} needs exactly one task id: liveagent cron ${what} t_…`);
  return { id: positionals[0]!, values: values as Record<string, string | boolean | undefined> };
}

export async function runCron(argv: string[], io: CronIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub) throw new CliUsageError(`cron needs a subcommand: ${SUBCOMMANDS}`);
  if (!['add', 'list', 'ls', 'rm', 'remove', 'runs', 'enable', 'disable'].includes(sub)) throw new CliUsageError(`unknown cron subcommand "${sub}" (try: ${SUBCOMMANDS})`);
  // Flags are checked before the database is opened: bad usage never creates a file.
  const parsed = sub === 'add' ? addInput(rest) : undefined;
  if (parsed) {
    const shape = TaskInputSchema.safeParse(parsed.input);
    if (!shape.success) throw new CliUsageError(issueText(shape.error));
  }
  const paths = resolvePaths();
  let settings;
  let postgresUrl: string | undefined;
  try {
    const file = readSettingsFile(paths.settingsFile);
    settings = cronSettings(file.cron);
    postgresUrl = configuredPostgresUrl(file)?.url;
  } catch (err) {
    throw new CliUsageError((err as Error).message.split('\n')[0]!);
  }
  const store = await openCronStore(paths.home, settings, postgresUrl);
  const tasks = new CronTasks(store, () => settings);
  try {
    switch (sub) {
      case 'add': {
        const t = await tasks.add(parsed!.input, 'cli');
        if (parsed!.json) io.stdout.write(`${JSON.stringify(t)}\n`);
        else {
          io.stdout.write(`added ${t.id} "${t.name}" (${kindOf(t)}, ${t.schedule}, ${t.timezone}${t.enabled ? '' : ', disabled'})\n`);
          io.stdout.write(`next fire times (${t.timezone}):\n${t.nextFireTimes.map((n) => `  ${local(n, t.timezone)}\n`).join('')}`);
        }
        return EXIT.ok;
      }
      case 'list':
      case 'ls': {
        const { values, positionals } = strictParse(rest, { json: { type: 'boolean' } });
        if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
        const all = await tasks.list();
        if (values.json) for (const t of all) io.stdout.write(`${JSON.stringify(t)}\n`);
        else if (!all.length) io.stdout.write('no scheduled tasks (add one with: liveagent cron add --schedule EXPR --prompt TEXT)\n');
        else {
          const rows = [['ID', 'NAME', 'KIND', 'SCHEDULE', 'TZ', 'STATE', 'NEXT', 'LAST']];
          for (const t of all) rows.push([t.id, oneLine(t.name, 40), kindOf(t), t.schedule, t.timezone, t.enabled ? 'on' : 'off', local(t.nextFireAt, t.timezone), t.lastRun ? t.lastRun.status : '-']);
          io.stdout.write(table(rows));
        }
        return EXIT.ok;
      }
      case 'rm':
      case 'remove': {
        const { id } = single(rest, 'rm');
        const t = await tasks.remove(id);
        io.stdout.write(`removed ${t.id} "${t.name}"\n`);
        return EXIT.ok;
      }
      case 'runs': {
        const { id, values } = single(rest, 'runs', { limit: { type: 'string' } });
        const { task, runs } = await tasks.runs(id, positiveInt('limit', values.limit as string | undefined) ?? 50);
        printRuns(io, task.timezone, runs, !!values.json);
        return EXIT.ok;
      }
      default: {
        const { id, values } = single(rest, sub);
        const t = await tasks.update(id, { enabled: sub === 'enable' });
        if (values.json) io.stdout.write(`${JSON.stringify(t)}\n`);
        else io.stdout.write(`${sub}d ${t.id} "${t.name}"; next: ${local(t.nextFireAt, t.timezone)}\n`);
        return EXIT.ok;
      }
    }
  } catch (err) {
    // Refused input (bad expression, unknown task) is a usage error: exit 2 with the reason.
    if (err instanceof CronTaskError) throw new CliUsageError(err.message);
    throw err;
  } finally {
    await store.close();
  }
}

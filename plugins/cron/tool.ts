/**
 * The Cron tool (tools modes): the model creates, lists and removes scheduled tasks. Tasks it
 * creates are labelled `created_by: model`. The tasks run only in a host that runs the
 * scheduler (`liveagent serve`), which the result says.
 */
import { z } from 'zod';
import type { JsonObject, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import type { CronService, CronTaskView } from './service.js';
import { CronTaskError } from './tasks.js';
import type { TaskInput } from './task-spec.js';

const description = `Schedules tasks that run later or repeatedly, and lists or removes them.

- action "create": schedule a task. Give exactly one of prompt (a message run by the agent in a new conversation each time, or in this one with this_conversation: true), command (a bash command) or url (an HTTP request).
- schedule: a cron expression with 5 fields (minute hour day-of-month month day-of-week) or 6 fields (seconds first), e.g. "0 9 * * 1-5" for 09:00 on weekdays; or an ISO time such as "2026-07-01T09:00:00" for one run.
- timezone: an IANA name (e.g. "Europe/Berlin"); default the host's. Times in the expression are read in it.
- max_runs: stop after that many runs. missed: "skip" (default) or "once" (run once when a run was missed while the host was down).
- action "list": every task with its next fire times. action "remove": delete the task with that id.
- Tasks run only while a LiveAgent server (liveagent serve) is running. Do not create a task unless the user asked for something scheduled or repeated.`;

export const CronArgsSchema = z.object({
  action: z.enum(['create', 'list', 'remove']).describe('What to do.'),
  id: z.string().min(1).optional().describe('remove: the task id (from list).'),
  name: z.string().min(1).max(200).optional().describe('create: a short name for the task.'),
  schedule: z.string().min(1).max(200).optional().describe('create: cron expression (5 or 6 fields) or ISO time.'),
  timezone: z.string().min(1).max(100).optional().describe('create: IANA time zone; default the host\'s.'),
  prompt: z.string().min(1).optional().describe('create: the message the agent runs.'),
  this_conversation: z.boolean().optional().describe('create, prompt: run in this conversation instead of a new one each time.'),
  command: z.string().min(1).optional().describe('create: a bash command, run in the current workspace folder.'),
  url: z.string().min(1).optional().describe('create: an http(s) URL to request.'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']).optional().describe('create, url: HTTP method (default GET).'),
  headers: z.record(z.string(), z.string()).optional().describe('create, url: request headers.'),
  body: z.string().optional().describe('create, url: request body.'),
  timeout: z.number().int().min(1).optional().describe('create: milliseconds before a run is stopped.'),
  max_runs: z.number().int().min(1).optional().describe('create: stop after this many runs.'),
  missed: z.enum(['skip', 'once']).optional().describe('create: what to do with runs missed while the host was down.'),
});
export type CronArgs = z.output<typeof CronArgsSchema>;

const when = (t: number | null | undefined, tz: string) => (t ? `${new Date(t).toISOString()} (${new Date(t).toLocaleString('en-US', { timeZone: tz })} ${tz})` : 'never');

function line(t: CronTaskView): string {
  const what = t.action.kind === 'prompt' ? `prompt` : t.action.kind === 'bash' ? `bash` : `http ${t.action.method ?? 'GET'}`;
  const last = t.lastRun ? `; last run ${t.lastRun.status}` : '';
  return `- ${t.id} "${t.name}" (${what}, ${t.schedule}, ${t.timezone}, ${t.enabled ? 'on' : 'off'}): next ${when(t.nextFireAt, t.timezone)}${last}`;
}

function text(s: string, isError = false, details?: JsonObject): ToolResult {
  return { content: [{ type: 'text', text: s }], ...(isError ? { isError } : {}), ...(details ? { details } : {}) };
}

function toInput(a: CronArgs, ctx: ToolContext): TaskInput | string {
  const given = [a.prompt, a.command, a.url].filter((v) => v !== undefined).length;
  if (!a.schedule) return 'create needs a schedule';
  if (given !== 1) return 'create needs exactly one of prompt, command or url';
  const timeout = a.timeout !== undefined ? { timeoutMs: a.timeout } : {};
  const action: TaskInput['action'] = a.prompt
    ? { kind: 'prompt', prompt: a.prompt, mode: ctx.mode, workdir: ctx.workdir, ...(a.this_conversation ? { conversationId: ctx.conversationId } : {}), ...timeout }
    : a.command
      ? { kind: 'bash', command: a.command, workdir: ctx.workdir, ...timeout }
      : { kind: 'http', url: a.url!, ...(a.method ? { method: a.method } : {}), ...(a.headers ? { headers: a.headers } : {}), ...(a.body !== undefined ? { body: a.body } : {}), ...timeout };
  return {
    schedule: a.schedule,
    action,
    ...(a.name ? { name: a.name } : {}),
    ...(a.timezone ? { timezone: a.timezone } : {}),
    ...(a.max_runs ? { maxExecutions: a.max_runs } : {}),
    ...(a.missed ? { missed: a.missed } : {}),
  };
}

export function cronTool(service: CronService): ToolDefinition<CronArgs> {
  return {
    name: 'Cron',
    description,
    parameters: CronArgsSchema,
    modes: ['tools', 'agent-dev'],
    concurrency: 'exclusive',
    async execute(args, ctx) {
      try {
        switch (args.action) {
          case 'list': {
            const tasks = await service.listTasks();
            return text(tasks.length ? tasks.map(line).join('\n') : 'No scheduled tasks.', false, { tasks: tasks.map((t) => ({ id: t.id, name: t.name, nextFireAt: t.nextFireAt })) });
          }
          case 'remove': {
            if (!args.id) return text('remove needs the id of a task (see action "list")', true);
            const t = await service.removeTask(args.id);
            return text(`Removed task ${t.id} "${t.name}".`, false, { id: t.id, removed: true });
          }
          case 'create': {
            const input = toInput(args, ctx);
            if (typeof input === 'string') return text(input, true);
            const t = await service.addTask(input, 'model');
            const next = t.nextFireTimes.map((n) => `  ${when(n, t.timezone)}`).join('\n');
            const where = service.isScheduling() ? '' : '\nIt runs while a LiveAgent server (liveagent serve) is running on this machine.';
            return text(`Created task ${t.id} "${t.name}". Next fire times:\n${next}${where}`, false, { id: t.id, nextFireTimes: t.nextFireTimes });
          }
        }
      } catch (err) {
        return text(err instanceof CronTaskError ? err.message : `Cron failed: ${(err as Error).message}`, true);
      }
    },
  };
}

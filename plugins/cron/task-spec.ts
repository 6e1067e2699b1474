/**
 * What a task is: the shapes every way in (the CLI, the Cron tool, the gateway) validates with
 * the same zod schemas, and the stored forms of tasks and runs.
 */
import path from 'node:path';
import { z } from 'zod';
import type { ExecutionMode } from '../../plugin-api.js';

export const RUN_STATUSES = ['pending', 'running', 'done', 'failed', 'skipped', 'missed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type CreatedBy = 'cli' | 'model' | 'gateway' | 'api';

const conversationId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'conversation id must be 1-128 letters, digits, _ or -');
const absolute = z.string().min(1).max(4096).refine((p) => path.isAbsolute(p), 'must be an absolute path');
const timeoutMs = z.number().int().min(1, 'timeoutMs must be at least 1');

export const PromptActionSchema = z.strictObject({
  kind: z.literal('prompt'),
  prompt: z.string().trim().min(1, 'the prompt is empty').max(100_000),
  mode: z.enum(['text', 'tools', 'agent-dev'], { error: () => 'mode must be text, tools or agent-dev' }).optional(),
  provider: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  workdir: absolute.optional(),
  /** Append every run to this conversation; absent: a new conversation per run. */
  conversationId: conversationId.optional(),
  timeoutMs: timeoutMs.optional(),
});

export const BashActionSchema = z.strictObject({
  kind: z.literal('bash'),
  command: z.string().trim().min(1, 'the command is empty').max(100_000),
  workdir: absolute.optional(),
  timeoutMs: timeoutMs.optional(),
});

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export const HttpActionSchema = z.strictObject({
  kind: z.literal('http'),
  url: z.url({ protocol: /^https?$/, error: () => 'url must be an http:// or https:// URL' }),
  method: z.enum(HTTP_METHODS, { error: () => `method must be one of ${HTTP_METHODS.join(', ')}` }).optional(),
  headers: z.record(z.string().min(1).max(200), z.string().max(8192)).optional(),
  body: z.string().max(1024 * 1024).optional(),
  timeoutMs: timeoutMs.optional(),
});

export const ActionSchema = z.discriminatedUnion('kind', [PromptActionSchema, BashActionSchema, HttpActionSchema], {
  error: () => 'action.kind must be prompt, bash or http',
});
export type CronAction = z.output<typeof ActionSchema>;
export type PromptAction = z.output<typeof PromptActionSchema>;
export type BashAction = z.output<typeof BashActionSchema>;
export type HttpAction = z.output<typeof HttpActionSchema>;

const name = z.string().trim().min(1, 'the name is empty').max(200);
const schedule = z.string().trim().min(1, 'the schedule is empty').max(200);
const timezone = z.string().min(1).max(100);
const maxExecutions = z.number().int().min(1, 'maxExecutions must be at least 1').nullable();
const overlap = z.enum(['skip', 'allow'], { error: () => 'overlap must be skip or allow' });
const missed = z.enum(['skip', 'once'], { error: () => 'missed must be skip or once' });

/** A new task. */
export const TaskInputSchema = z.strictObject({
  name: name.optional(),
  schedule,
  /** IANA time zone; default the host's. */
  timezone: timezone.optional(),
  action: ActionSchema,
  enabled: z.boolean().optional(),
  /** Stop (disable the task) after this many executions; null or absent: no limit. */
  maxExecutions: maxExecutions.optional(),
  /** `skip`: a fire while the previous run still goes is recorded `skipped`; `allow`: runs alongside. */
  overlap: overlap.optional(),
  /** What a fire time that passed while no scheduler ran becomes: `skip` (recorded missed) or `once` (one catch-up run now). */
  missed: missed.optional(),
});
export type TaskInput = z.input<typeof TaskInputSchema>;

/** A change to a task (every field optional; the action is replaced whole). */
export const TaskPatchSchema = z.strictObject({
  name: name.optional(),
  schedule: schedule.optional(),
  timezone: timezone.optional(),
  action: ActionSchema.optional(),
  enabled: z.boolean().optional(),
  maxExecutions: maxExecutions.optional(),
  overlap: overlap.optional(),
  missed: missed.optional(),
});
export type TaskPatch = z.output<typeof TaskPatchSchema>;

/** A stored task. */
export interface CronTask {
  id: string;
  name: string;
  schedule: string;
  timezone: string;
  action: CronAction;
  enabled: boolean;
  maxExecutions: number | null;
  /** Runs started so far (skipped and missed fires are not executions). */
  executions: number;
  overlap: 'skip' | 'allow';
  missed: 'skip' | 'once';
  createdBy: CreatedBy;
  createdAt: number;
  updatedAt: number;
  /** Fire times up to here (epoch ms) have been handled: run, skipped or recorded missed. */
  lastCheckAt: number;
}

/** One fire of a task and what became of it. */
export interface CronRun {
  id: number;
  taskId: string;
  status: RunStatus;
  /** The fire time it stands for (epoch ms). */
  scheduledAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** Prompt tasks: the conversation the run went into. */
  conversationId: string | null;
  /** Capped output (bash stdout+stderr, http status and body, prompt reply) or why it was skipped or missed. */
  output: string | null;
  error: string | null;
  /** The scheduler that ran it. */
  holder: string | null;
}

/** The name a task gets when it is given none. */
export function defaultName(action: CronAction): string {
  const text = action.kind === 'prompt' ? action.prompt : action.kind === 'bash' ? action.command : `${action.method ?? 'GET'} ${action.url}`;
  const line = text.split('\n')[0]!.trim();
  return line.length > 60 ? `${line.slice(0, 57)}…` : line;
}

/** The first issue of a failed zod parse, as one line naming the field. */
export function issueText(error: z.ZodError, prefix = ''): string {
  const i = error.issues[0]!;
  const where = [prefix, ...i.path.map(String)].filter(Boolean).join('.');
  return where ? `${where}: ${i.message}` : i.message;
}

export type { ExecutionMode };

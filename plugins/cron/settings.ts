/**
 * The `cron` settings section (top-level key `cron`, owned by the cron plugin). Every timing is
 * here so tests run in seconds; the defaults suit a long-running `liveagent serve`.
 */
import { z } from 'zod';

const ms = (def: number, min = 1) => z.number().int().min(min).default(def);

export const CronSettingsSchema = z
  .strictObject({
    /** The database file, relative to `$LIVEAGENT_HOME`. */
    file: z.string().min(1, 'must be a non-empty path').default('cron.db'),
    /** False: `serve` does not run the scheduler (tasks can still be added and listed). */
    schedulerEnabled: z.boolean().default(true),
    /** How often the scheduler looks for changes made by other processes (a CLI, another tool run) and renews its lease. */
    pollIntervalMs: ms(2000, 10),
    /** How long the scheduler's lease lasts without renewal; another host takes over after it expires. */
    leaseMs: ms(30_000, 100),
    /** How often the lease is renewed (must be well under leaseMs). */
    leaseRenewMs: ms(10_000, 10),
    /** A fire time found later than this (the host was down or asleep) is missed, not run on time. */
    lateToleranceMs: ms(60_000, 0),
    /** Timeouts per kind, used when a task gives none. */
    bashTimeoutMs: ms(10 * 60_000),
    httpTimeoutMs: ms(60_000),
    promptTimeoutMs: ms(30 * 60_000),
    /** The longest timeout a task may ask for. */
    maxTimeoutMs: ms(24 * 60 * 60_000),
    /** Wait between SIGTERM and SIGKILL to a bash task's process group. */
    killGraceMs: ms(500, 0),
    /** Output kept per run (bash: head and tail; http: the start of the body; prompt: the reply's start). */
    outputLimitBytes: ms(16 * 1024, 64),
    /** Missed fire times recorded one by one per catch-up (the rest are counted in one line). */
    missedRecordLimit: ms(20, 1),
    /** Runs kept per task (older ones are pruned). */
    runsKept: ms(200, 1),
    /** Most tasks the database may hold. */
    maxTasks: ms(200, 1),
    /** How long a write waits for another process holding the database lock (PostgreSQL: for a connection). */
    busyTimeoutMs: ms(10_000, 0),
    /** PostgreSQL only: connections in the cron store's pool. */
    poolMax: z.number().int().min(2).max(100).default(4),
  })
  .refine((s) => s.leaseRenewMs < s.leaseMs, { message: 'leaseRenewMs must be below leaseMs', path: ['leaseRenewMs'] })
  .prefault({});

export type CronSettings = z.output<typeof CronSettingsSchema>;

/** The `cron` section of a settings object, with defaults; throws a one-line error naming the field. */
export function cronSettings(section: unknown): CronSettings {
  const r = CronSettingsSchema.safeParse(section ?? {});
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  throw new Error(`invalid settings: ${['cron', ...i.path.map(String)].join('.')}: ${i.message}`);
}

/**
 * Schedules: a 5- or 6-field cron expression (seconds first when there are six) or a one-shot
 * ISO 8601 time, in an IANA time zone. croner does the parsing and the time-zone and DST
 * arithmetic; this file only says which fire times fall in a window. croner is imported on
 * first use, so a host that never touches a schedule never loads it.
 */
import type { Cron as CronJob } from 'croner';

type CronerModule = typeof import('croner');
let croner: CronerModule | undefined;

/** Load croner once; every other function here needs it loaded. */
export async function loadCroner(): Promise<void> {
  croner ??= await import('croner');
}

function lib(): CronerModule {
  if (!croner) throw new Error('croner is not loaded: await loadCroner() first');
  return croner;
}

/** The host's time zone (the default for new tasks). */
export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** A problem with a schedule or a time zone, in words a user can act on. */
export class ScheduleError extends Error {}

/** Throws a ScheduleError unless `tz` is an IANA time zone this Node knows. */
export function checkTimeZone(tz: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw new ScheduleError(`unknown time zone "${tz}" (use an IANA name such as Europe/Berlin or UTC)`);
  }
}

const ISO_LIKE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** True when the schedule is a one-shot time rather than a cron expression. */
export function isOneShot(expr: string): boolean {
  return ISO_LIKE.test(expr.trim());
}

export interface Schedule {
  readonly expr: string;
  readonly timezone: string;
  readonly oneShot: boolean;
  /** The first fire time strictly after `after` (ms), or undefined when there is none. */
  next(after: number): number | undefined;
  /** The next `n` fire times after `after`. */
  nextN(n: number, after: number): number[];
  /**
   * Fire times in (after, upTo], oldest first: the newest `keep` of them, and how many there
   * were in all (counted up to `countCap`; `capped` when there were more).
   */
  between(after: number, upTo: number, keep: number, countCap?: number): { times: number[]; count: number; capped: boolean };
}

/**
 * Parse a schedule. A bad expression or time zone throws a ScheduleError carrying croner's own
 * reason (`CronPattern: Invalid value for minute: 61`).
 */
export function parseSchedule(expr: string, timezone: string): Schedule {
  const tz = checkTimeZone(timezone);
  const text = expr.trim();
  if (!text) throw new ScheduleError('the schedule is empty');
  const oneShot = isOneShot(text);
  let job: CronJob;
  try {
    // paused: a job that is only asked questions never arms a timer of its own.
    job = new (lib().Cron)(text, { timezone: tz, mode: '5-or-6-parts', paused: true });
    job.nextRun(new Date(0)); // surfaces time-zone conversion errors now, not at the first fire
  } catch (err) {
    throw new ScheduleError(`invalid schedule "${text}": ${(err as Error).message}`);
  }
  const at = oneShot ? job.getOnce()?.getTime() : undefined;
  if (oneShot && (at === undefined || !Number.isFinite(at))) throw new ScheduleError(`invalid schedule "${text}": not a valid date and time`);
  const next = (after: number): number | undefined => {
    if (oneShot) return at! > after ? at : undefined;
    const d = job.nextRun(new Date(after));
    return d ? d.getTime() : undefined;
  };
  return {
    expr: text,
    timezone: tz,
    oneShot,
    next,
    nextN(n, after) {
      const out: number[] = [];
      for (let t = next(after); t !== undefined && out.length < n; t = next(t)) out.push(t);
      return out;
    },
    between(after, upTo, keep, countCap = 1000) {
      if (oneShot) return at! > after && at! <= upTo ? { times: [at!], count: 1, capped: false } : { times: [], count: 0, capped: false };
      let count = 0;
      const ring: number[] = [];
      for (let t = next(after); t !== undefined && t <= upTo; t = next(t)) {
        if (++count > countCap) break;
        ring.push(t);
        if (ring.length > keep) ring.shift();
      }
      if (count <= countCap) return { times: ring, count, capped: false };
      // Too many to walk: the newest ones, found backwards. previousRuns works in whole seconds
      // and excludes its reference, so start past upTo's second and filter.
      const newest = job
        .previousRuns(keep, new Date(Math.floor(upTo / 1000) * 1000 + 1000))
        .map((d) => d.getTime())
        .filter((t) => t > after && t <= upTo)
        .reverse();
      return { times: newest, count: countCap, capped: true };
    },
  };
}

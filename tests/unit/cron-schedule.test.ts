/**
 * Schedules through croner: 5- and 6-field expressions, one-shot ISO times, time zones and DST,
 * croner's own reasons for bad input, and which fire times fall in a window.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTimeZone, isOneShot, loadCroner, parseSchedule, ScheduleError } from '../../plugins/cron/schedule.js';

beforeAll(() => loadCroner());

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('cron schedules', () => {
  it('reads 5 fields as minutes and 6 fields as seconds first', () => {
    const five = parseSchedule('*/15 * * * *', 'UTC');
    expect(five.nextN(3, at('2026-01-01T10:07:30Z')).map(iso)).toEqual(['2026-01-01T10:15:00.000Z', '2026-01-01T10:30:00.000Z', '2026-01-01T10:45:00.000Z']);
    const six = parseSchedule('*/2 * * * * *', 'UTC');
    expect(six.nextN(2, at('2026-01-01T10:00:00.500Z')).map(iso)).toEqual(['2026-01-01T10:00:02.000Z', '2026-01-01T10:00:04.000Z']);
    expect(six.next(at('2026-01-01T10:00:02.000Z'))).toBe(at('2026-01-01T10:00:04.000Z'));
  });

  it('refuses bad expressions with croner\'s reason, and 7 fields', () => {
    expect(() => parseSchedule('61 * * * *', 'UTC')).toThrow(/invalid schedule "61 \* \* \* \*": .*minute: 61/);
    expect(() => parseSchedule('* * *', 'UTC')).toThrow(ScheduleError);
    expect(() => parseSchedule('* * * * * * *', 'UTC')).toThrow(/5 or 6 parts/);
    expect(() => parseSchedule('2026-13-45T10:00:00', 'UTC')).toThrow(/invalid schedule/);
  });

  it('validates time zones by IANA name', () => {
    expect(checkTimeZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(() => checkTimeZone('Mars/Olympus')).toThrow(/unknown time zone "Mars\/Olympus"/);
    expect(() => parseSchedule('* * * * *', 'Nowhere/Land')).toThrow(/unknown time zone/);
  });

  it('fires in the task\'s time zone, across a DST change', () => {
    const berlin = parseSchedule('0 9 * * *', 'Europe/Berlin');
    // 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC after the spring change (29 March 2026).
    expect(berlin.nextN(3, at('2026-03-27T12:00:00Z')).map(iso)).toEqual(['2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z', '2026-03-30T07:00:00.000Z']);
    const ny = parseSchedule('30 12 * * *', 'America/New_York');
    expect(iso(ny.next(at('2026-07-01T00:00:00Z'))!)).toBe('2026-07-01T16:30:00.000Z');
  });

  it('one-shot ISO times are read in the time zone unless they carry an offset', () => {
    expect(isOneShot('2026-07-01T09:00:00')).toBe(true);
    expect(isOneShot('0 9 * * *')).toBe(false);
    const local = parseSchedule('2026-07-01T09:00:00', 'Europe/Berlin');
    expect(local.oneShot).toBe(true);
    expect(iso(local.next(0)!)).toBe('2026-07-01T07:00:00.000Z');
    expect(local.next(at('2026-07-01T07:00:00Z'))).toBeUndefined();
    expect(iso(parseSchedule('2026-07-01T09:00:00Z', 'Europe/Berlin').next(0)!)).toBe('2026-07-01T09:00:00.000Z');
  });

  it('between() counts the fire times of a window and keeps the newest', () => {
    const s = parseSchedule('*/2 * * * * *', 'UTC');
    const w = s.between(at('2026-01-01T10:00:00.000Z'), at('2026-01-01T10:00:10.300Z'), 3);
    expect(w.count).toBe(5);
    expect(w.capped).toBe(false);
    expect(w.times.map(iso)).toEqual(['2026-01-01T10:00:06.000Z', '2026-01-01T10:00:08.000Z', '2026-01-01T10:00:10.000Z']);
    // A window with more fire times than the cap is counted up to the cap, the newest still found.
    const big = s.between(at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:00.500Z'), 2, 100);
    expect(big).toMatchObject({ count: 100, capped: true });
    expect(big.times.map(iso)).toEqual(['2026-01-01T23:59:58.000Z', '2026-01-02T00:00:00.000Z']);
    expect(s.between(at('2026-01-01T10:00:00.000Z'), at('2026-01-01T10:00:01.999Z'), 3)).toEqual({ times: [], count: 0, capped: false });
  });
});

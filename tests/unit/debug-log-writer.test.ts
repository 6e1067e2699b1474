/**
 * The debug-log writer and files: records appended in order off the caller's path, a bounded
 * queue that counts what it drops, rotation by size, a write error reported once and never
 * thrown, file names only from safe ids, and collection by age.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectOld, debugFile, fileStem } from '../../plugins/debug-log/files.js';
import { JsonlWriter, type WriterOptions } from '../../plugins/debug-log/writer.js';
import { trackResources } from '../helpers/cleanup.js';

const t = trackResources();

function writer(file: string, o: Partial<WriterOptions> = {}) {
  const errors: Error[] = [];
  const w = new JsonlWriter(file, { maxFileBytes: 1 << 20, maxFiles: 5, maxQueue: 10_000, onError: (e) => void errors.push(e), ...o });
  return { w, errors };
}

const lines = (file: string) => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const rec = (i: number) => ({ ts: i, kind: 'test', conversationId: 'c1', runId: 'r1', round: 1, i });

describe('JsonlWriter', () => {
  it('appends every record as one line, in order, after push returns', async () => {
    const file = path.join(t.tmp('la-debuglog-'), 'debug', 'c1.jsonl');
    const { w, errors } = writer(file);
    for (let i = 0; i < 500; i++) w.push(rec(i));
    // Nothing is written synchronously: push never waits on the disk.
    expect(fs.existsSync(file)).toBe(false);
    await w.flush();
    expect(lines(file).map((r) => r.i)).toEqual([...Array(500).keys()]);
    expect(errors).toEqual([]);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a full queue drops records and says how many in a `dropped` record before the next one written', async () => {
    const file = path.join(t.tmp('la-debuglog-'), 'c1.jsonl');
    const { w } = writer(file, { maxQueue: 10 });
    for (let i = 0; i < 100; i++) w.push(rec(i));
    await w.flush();
    w.push(rec(100));
    await w.flush();
    const out = lines(file);
    expect(out.slice(0, 10).map((r) => r.i)).toEqual([...Array(10).keys()]);
    expect(out[10]).toMatchObject({ kind: 'dropped', count: 90, conversationId: 'c1', runId: 'r1', round: 1 });
    expect(out[11]).toMatchObject({ i: 100 });
  });

  it('rotates by size: <id>.jsonl, <id>.1.jsonl, ... keeping maxFiles files, each within maxFileBytes', async () => {
    const dir = t.tmp('la-debuglog-');
    const file = path.join(dir, 'c1.jsonl');
    const { w } = writer(file, { maxFileBytes: 1000, maxFiles: 3 });
    const pad = 'x'.repeat(100);
    for (let i = 0; i < 60; i++) {
      w.push({ ...rec(i), pad });
      if (i % 7 === 0) await w.flush(); // rotation across separate appends too
    }
    await w.flush();
    expect(fs.readdirSync(dir).sort()).toEqual(['c1.1.jsonl', 'c1.2.jsonl', 'c1.jsonl']);
    for (const f of fs.readdirSync(dir)) expect(fs.statSync(path.join(dir, f)).size).toBeLessThanOrEqual(1000);
    // Oldest first: .2, .1, live; the records continue across them and end with the last one.
    const seen = ['c1.2.jsonl', 'c1.1.jsonl', 'c1.jsonl'].flatMap((f) => lines(path.join(dir, f)).map((r) => r.i));
    expect(seen.at(-1)).toBe(59);
    expect(seen).toEqual([...Array(seen.length).keys()].map((k) => k + seen[0]));
  });

  it('maxFiles 1 keeps only the live file', async () => {
    const dir = t.tmp('la-debuglog-');
    const file = path.join(dir, 'c1.jsonl');
    const { w } = writer(file, { maxFileBytes: 1024, maxFiles: 1 });
    for (let i = 0; i < 50; i++) w.push({ ...rec(i), pad: 'y'.repeat(100) });
    await w.flush();
    expect(fs.readdirSync(dir)).toEqual(['c1.jsonl']);
    expect(lines(file).at(-1).i).toBe(49);
  });

  it('a write error (a folder in the way) is reported once, disables the writer and never throws', async () => {
    const dir = t.tmp('la-debuglog-');
    const file = path.join(dir, 'c1.jsonl');
    fs.mkdirSync(file);
    const { w, errors } = writer(file);
    w.push(rec(1));
    await w.flush();
    w.push(rec(2));
    await w.flush();
    expect(errors).toHaveLength(1);
    expect(w.disabled).toBe(true);
    expect(w.pending).toBe(0);
  });

  it('a debug folder removed while the host runs is made again', async () => {
    const dir = path.join(t.tmp('la-debuglog-'), 'debug');
    const file = path.join(dir, 'c1.jsonl');
    const { w, errors } = writer(file);
    w.push(rec(1));
    await w.flush();
    fs.rmSync(dir, { recursive: true });
    w.push(rec(2));
    await w.flush();
    expect(lines(file).map((r) => r.i)).toEqual([2]);
    expect(errors).toEqual([]);
  });

  it('a record that cannot be serialized keeps its place as an `unserializable` record', async () => {
    const file = path.join(t.tmp('la-debuglog-'), 'c1.jsonl');
    const { w } = writer(file);
    const loop: Record<string, unknown> = { ...rec(1) };
    loop.self = loop;
    w.push(rec(0));
    w.push(loop);
    w.push(rec(2));
    await w.flush();
    expect(lines(file).map((r) => r.kind)).toEqual(['test', 'unserializable', 'test']);
  });
});

describe('debug files', () => {
  it('conversation ids become file names only when safe; others get a hashed stem', () => {
    expect(debugFile('/h', 'c_abc-1')).toBe(path.join('/h', 'debug', 'c_abc-1.jsonl'));
    for (const bad of ['../etc/passwd', 'a/b', 'a.b', '', 'x'.repeat(129), 'nul\0']) {
      const { stem, safe } = fileStem(bad);
      expect(safe).toBe(false);
      expect(stem).toMatch(/^x-[0-9a-f]{32}$/);
    }
  });

  it('collects our files older than retentionDays, never others, and nothing with 0', async () => {
    const dir = t.tmp('la-debuglog-');
    const old = (Date.now() - 20 * 86_400_000) / 1000;
    for (const name of ['old.jsonl', 'old.1.jsonl', 'notes.txt', 'fresh.jsonl']) fs.writeFileSync(path.join(dir, name), '{}\n');
    for (const name of ['old.jsonl', 'old.1.jsonl', 'notes.txt']) fs.utimesSync(path.join(dir, name), old, old);
    expect(await collectOld(dir, 0)).toBe(0);
    expect(fs.readdirSync(dir)).toHaveLength(4);
    expect(await collectOld(dir, 14)).toBe(2);
    expect(fs.readdirSync(dir).sort()).toEqual(['fresh.jsonl', 'notes.txt']);
    expect(await collectOld(path.join(dir, 'missing'), 14)).toBe(0);
  });
});

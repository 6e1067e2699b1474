/**
 * The process trees a host has running, kept on disk so that a host killed without cleanup
 * (kill -9, the OOM killer) does not leave them running forever: the next host to start with
 * the same `$LIVEAGENT_HOME` stops them.
 *
 * Each host writes `<home>/run/processes/<hostpid>.json` (atomically: temp file + rename) with
 * its own start time and, per tree, the shell's pid, start time (/proc stat field 22) and tag.
 * The file is removed once nothing it names is alive. At start, a record whose host is gone
 * (pid dead, or reused by a process with another start time) is reaped: every live process that
 * carries one of its tags is stopped. A tag is 96 random bits in the environment of the tree's
 * processes only, so a reused pid is never mistaken for one of ours.
 *
 * One instance per home per process (Bash and ManagedProcess share it); a process `exit`
 * handler SIGKILLs whatever is still recorded, synchronously, as the last safety net.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { killTreesNow, stopTree, type ProcessTree, type Survivor } from './process-group.js';
import { isSameProcess, procStat, selfAndAncestors } from './process-scan.js';

const RecordSchema = z.object({
  version: z.literal(1),
  hostPid: z.number().int().positive(),
  hostStart: z.number().int().nonnegative(),
  trees: z.array(z.object({ pgid: z.number().int().positive(), start: z.number().int().nonnegative().optional(), tag: z.string().regex(/^[0-9a-f]{8,64}$/) })),
});
type ProcessRecord = z.output<typeof RecordSchema>;

export interface ReapReport {
  /** Records of dead hosts found. */
  records: number;
  /** Processes they left that were stopped. */
  stopped: number;
  survivors: Survivor[];
}

const NOTHING: ReapReport = { records: 0, stopped: 0, survivors: [] };

export class HostProcesses {
  private readonly trees = new Map<string, ProcessTree>();
  private readonly dir: string;
  private readonly file: string;
  private readonly hostStart = procStat(process.pid)?.start ?? 0;
  private writeFailed = false;
  /** Done stopping what dead hosts left (started at construction). */
  readonly reaped: Promise<ReapReport>;
  users = 0;

  constructor(readonly home: string, reapGraceMs: number, private readonly warn: (message: string) => void = () => {}) {
    this.dir = path.join(home, 'run', 'processes');
    this.file = path.join(this.dir, `${process.pid}.json`);
    this.reaped = this.reap(reapGraceMs).catch((err) => {
      this.warn(`could not stop the processes a previous run left: ${(err as Error).message}`);
      return NOTHING;
    });
  }

  add(tree: ProcessTree): void {
    this.trees.set(tree.tag, tree);
    this.flush();
  }

  /** Forget a tree once it is confirmed dead. */
  remove(tag: string): void {
    if (this.trees.delete(tag)) this.flush();
  }

  live(): ProcessTree[] {
    return [...this.trees.values()];
  }

  /** SIGKILL every recorded tree now; keep on record only what survived. */
  killAllNow(): void {
    if (this.trees.size === 0) return;
    const alive = killTreesNow(this.live());
    for (const tag of [...this.trees.keys()]) if (!alive.has(tag)) this.trees.delete(tag);
    this.flush();
  }

  private flush(): void {
    try {
      if (this.trees.size === 0) {
        fs.rmSync(this.file, { force: true });
        return;
      }
      const record: ProcessRecord = { version: 1, hostPid: process.pid, hostStart: this.hostStart, trees: this.live().map((t) => ({ pgid: t.pgid, tag: t.tag, ...(t.start !== undefined ? { start: t.start } : {}) })) };
      fs.mkdirSync(this.dir, { recursive: true });
      const tmp = `${this.file}.${Math.random().toString(36).slice(2)}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(record));
      fs.renameSync(tmp, this.file);
    } catch (err) {
      // Recording is a safety net: a read-only home must not fail the command.
      if (!this.writeFailed) this.warn(`could not record running processes in ${this.dir}: ${(err as Error).message}`);
      this.writeFailed = true;
    }
  }

  private async reap(graceMs: number): Promise<ReapReport> {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return NOTHING;
    }
    const dead: Array<{ file: string; record: ProcessRecord }> = [];
    for (const name of names) {
      const file = path.join(this.dir, name);
      if (name.endsWith('.tmp')) {
        // A temp file whose writer is gone (it died between write and rename).
        const writer = Number(name.split('.')[0]);
        if (!procStat(writer)) fs.rmSync(file, { force: true });
        continue;
      }
      if (!/^\d+(-\d+)?\.json$/.test(name)) continue;
      let record: ProcessRecord;
      try {
        record = RecordSchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
      } catch {
        this.warn(`ignoring the unreadable process record ${file}`);
        continue;
      }
      const isMe = record.hostPid === process.pid && record.hostStart === this.hostStart;
      if (isMe || isSameProcess(record.hostPid, record.hostStart)) continue;
      if (file === this.file) {
        // A dead host had our pid: move its record aside before ours overwrites it.
        const aside = path.join(this.dir, `${record.hostPid}-${record.hostStart}.json`);
        fs.renameSync(file, aside);
        dead.push({ file: aside, record });
      } else dead.push({ file, record });
    }
    if (dead.length === 0) return NOTHING;
    const exclude = selfAndAncestors();
    let stopped = 0;
    const survivors: Survivor[] = [];
    await Promise.all(
      dead.map(async ({ file, record }) => {
        // Only processes carrying a recorded tag are touched: a pid reused since is never ours.
        const results = await Promise.all(record.trees.map((t) => stopTree(t, graceMs, { exclude, groupNeedsTaggedLeader: true })));
        let left = false;
        for (const r of results) {
          if (r.how !== 'none') stopped++;
          survivors.push(...r.survivors);
          if (r.survivors.length) left = true;
        }
        // With survivors the record stays, so the next start tries again.
        if (!left) fs.rmSync(file, { force: true });
      }),
    );
    if (stopped) this.warn(`stopped ${stopped} process tree(s) a previous LiveAgent run (killed before it could clean up) left running`);
    return { records: dead.length, stopped, survivors };
  }
}

const byHome = new Map<string, HostProcesses>();
let exitHooked = false;

function onExit(): void {
  for (const h of byHome.values()) h.killAllNow();
}

/**
 * The shared record for `home`; the first acquisition in this process reaps dead hosts' leftovers.
 * Pair with {@link releaseHostProcesses}.
 */
export function acquireHostProcesses(home: string, o: { reapGraceMs?: number; warn?: (message: string) => void } = {}): HostProcesses {
  const key = path.resolve(home);
  let h = byHome.get(key);
  if (!h) {
    h = new HostProcesses(key, o.reapGraceMs ?? 500, o.warn);
    byHome.set(key, h);
  }
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', onExit);
  }
  h.users++;
  return h;
}

export function releaseHostProcesses(h: HostProcesses): void {
  h.users--;
  if (h.users > 0) return;
  h.killAllNow();
  if (h.live().length === 0 && byHome.get(h.home) === h) byHome.delete(h.home);
}

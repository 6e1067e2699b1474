/**
 * A throwaway PostgreSQL cluster for a test file: initdb into a temp folder, started on a free
 * port with its unix socket in that folder, trust auth, fsync off; stopped and removed after
 * the file. `usePostgres()` registers the beforeAll/afterAll; `postgresSkip` is the reason the
 * file cannot run here (undefined when it can), for `describe.skipIf`.
 *
 * The server refuses to run as root: as root it runs as `nobody` (through `runuser`) in a temp
 * folder `nobody` owns. Binaries: LIVEAGENT_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin,
 * else `initdb` on PATH.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { afterAll, beforeAll } from 'vitest';

const RUN_AS = 'nobody';

function findBin(): string | undefined {
  const fromEnv = process.env.LIVEAGENT_PG_BIN;
  if (fromEnv) return fs.existsSync(path.join(fromEnv, 'initdb')) ? fromEnv : undefined;
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => /^\d+$/.test(v) && Number(v) >= 14).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (fs.existsSync(path.join(base, v, 'bin', 'initdb'))) return path.join(base, v, 'bin');
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() ? path.dirname(which.stdout.trim()) : undefined;
}

function uidOf(user: string): { uid: number; gid: number } | undefined {
  const r = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', user], { encoding: 'utf8' });
  return r.status === 0 && g.status === 0 ? { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) } : undefined;
}

const bin = findBin();
const isRoot = process.getuid?.() === 0;
const runuser = isRoot ? ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => fs.existsSync(p)) : undefined;
const runAs = isRoot ? uidOf(RUN_AS) : undefined;

/** Why the PostgreSQL tests cannot run here; undefined when they can. */
export const postgresSkip: string | undefined = !bin
  ? 'PostgreSQL tests skipped: no PostgreSQL 14+ found (install the postgresql package or set LIVEAGENT_PG_BIN)'
  : isRoot && (!runuser || !runAs)
    ? `PostgreSQL tests skipped: running as root and no runuser or "${RUN_AS}" user to run the server as`
    : undefined;
if (postgresSkip) process.stdout.write(`${postgresSkip}\n`);

export interface PgCluster {
  /** URL of the cluster's `postgres` database (as the superuser `liveagent`). */
  url: string;
  port: number;
  /** A fresh, empty database; its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Run a PostgreSQL binary, as `nobody` when we are root. */
function pgExec(tool: string, args: string[]): string {
  const exe = path.join(bin!, tool);
  const [cmd, argv] = isRoot ? [runuser!, ['-u', RUN_AS, '--', exe, ...args]] : [exe, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], cwd: os.tmpdir() });
}

export async function startPostgres(): Promise<PgCluster> {
  if (postgresSkip) throw new Error(postgresSkip);
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'h19-pg-')));
  if (isRoot) fs.chownSync(dir, runAs!.uid, runAs!.gid);
  const data = path.join(dir, 'data');
  const port = await freePort();
  let started = false;
  const knexes: Knex[] = [];
  const stop = async () => {
    for (const k of knexes.splice(0)) await k.destroy().catch(() => {});
    if (started) {
      started = false;
      try {
        pgExec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        /* already gone */
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    pgExec('initdb', ['-D', data, '-A', 'trust', '-U', 'liveagent', '-E', 'UTF8', '--no-sync', '--locale=C']);
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100`;
    pgExec('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-o', opts, '-w', '-t', '30', 'start']);
    started = true;
  } catch (err) {
    const log = fs.existsSync(path.join(dir, 'log')) ? fs.readFileSync(path.join(dir, 'log'), 'utf8').slice(-2000) : '';
    await stop();
    throw new Error(`could not start PostgreSQL: ${(err as { stderr?: string }).stderr ?? (err as Error).message}${log}`);
  }
  const url = `postgres://liveagent@127.0.0.1:${port}/postgres`;
  let n = 0;
  let admin: Knex | undefined;
  return {
    url,
    port,
    async createDatabase() {
      if (!admin) {
        const { default: createKnex } = await import('knex');
        admin = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
        knexes.push(admin);
      }
      const name = `t${process.pid}_${++n}`;
      await admin.raw(`CREATE DATABASE ${name}`);
      return `postgres://liveagent@127.0.0.1:${port}/${name}`;
    },
    stop,
  };
}

/** One cluster for the test file (started in beforeAll, removed in afterAll). */
export function usePostgres(): { cluster(): PgCluster } {
  let cluster: PgCluster | undefined;
  beforeAll(async () => {
    if (postgresSkip) return;
    cluster = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    cluster: () => {
      if (!cluster) throw new Error('the PostgreSQL cluster is not running');
      return cluster;
    },
  };
}

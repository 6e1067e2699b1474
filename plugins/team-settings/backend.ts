/**
 * The team's shared settings in PostgreSQL: one row of `team_settings` (the document as JSON
 * text, so key order survives, and a version), patched under `SELECT … FOR UPDATE` so saves from
 * every process serialize and all keep their keys. A save ends with `NOTIFY liveagent_settings`
 * carrying the new version; a dedicated `pg` client LISTENs (a pooled connection cannot), and
 * a slow poll of the version catches what rang while that client was reconnecting.
 *
 * Documents are delivered to watchers only when newer than the last one this process saw, so a
 * slow poll can never bring back an older version after a save.
 */
import type { Knex } from 'knex';
import type { Disposable, Logger, SettingsPatchOp, SharedSettingsBackend } from '../../plugin-api.js';
import { loadPg, openPgPool, type PgClient } from '../../lib/database/pg.js';
import { applySettingsPatch } from '../../core/define-plugin.js';

export const SETTINGS_CHANNEL = 'liveagent_settings';

/** Any constant, the same in every process ('LAs1'). */
const SCHEMA_LOCK_KEY = 0x4c_41_73_31;

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS team_settings (
     id smallint PRIMARY KEY CHECK (id = 1),
     doc text NOT NULL,
     version bigint NOT NULL
   )`,
  // The row always exists, so the first save locks it like every later one (no insert race).
  `INSERT INTO team_settings (id, doc, version) VALUES (1, '{}', 0) ON CONFLICT (id) DO NOTHING`,
];

export interface BackendOptions {
  url: string;
  logger: Logger;
  /** Connecting, or waiting for a free connection (ms). */
  connectTimeoutMs: () => number;
  /** How often the version is compared with the last one seen, in case a NOTIFY was lost (ms). */
  pollMs: () => number;
}

type Doc = Record<string, unknown>;
interface Row {
  doc: string;
  version: number;
}

export class PgSettingsBackend implements SharedSettingsBackend {
  readonly name = 'team-settings';
  private opening: Promise<Knex> | undefined;
  /** The newest version loaded, saved or delivered. */
  private seen = -1;
  private readonly listeners = new Set<(doc: Doc) => void>();
  private listener: PgClient | undefined;
  private reconnecting = false;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private again = false;
  /** Watching starts after the first load (tried): a delivery racing that load could be older than it. */
  private loaded = false;
  private closed = false;

  constructor(private readonly o: BackendOptions) {}

  async load(): Promise<Doc | undefined> {
    try {
      const row = await this.read();
      this.seen = Math.max(this.seen, row.version);
      return row.version === 0 ? undefined : parseDoc(row.doc);
    } finally {
      if (!this.loaded) {
        this.loaded = true;
        if (this.listeners.size) this.startWatching();
      }
    }
  }

  async save(ops: SettingsPatchOp[], check: (doc: Doc) => void): Promise<Doc> {
    const knex = await this.db();
    const { doc, version } = await knex.transaction(async (trx) => {
      const row = (await trx('team_settings').select('doc', 'version').where({ id: 1 }).forUpdate().first()) as Row | undefined;
      const next = applySettingsPatch(row ? parseDoc(row.doc) : {}, ops);
      check(next); // throws: the transaction rolls back, nothing is stored
      const version = (row?.version ?? 0) + 1;
      await trx('team_settings').where({ id: 1 }).update({ doc: JSON.stringify(next), version });
      // Delivered at commit, never for a rolled-back save.
      await trx.raw('SELECT pg_notify(?, ?)', [SETTINGS_CHANNEL, String(version)]);
      return { doc: next, version };
    });
    this.seen = Math.max(this.seen, version);
    return doc;
  }

  watch(listener: (doc: Doc) => void): Disposable {
    this.listeners.add(listener);
    if (this.listeners.size === 1 && this.loaded) this.startWatching();
    return { dispose: () => void this.listeners.delete(listener) };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => {});
    const knex = await this.opening?.catch(() => undefined);
    await knex?.destroy().catch(() => {});
  }

  // ── Connections ───────────────────────────────────────────────────────────────────────────

  private db(): Promise<Knex> {
    if (this.closed) return Promise.reject(new Error('the team settings store is closed'));
    if (!this.opening) {
      const opening = openPgPool(this.o.url, { poolMax: 2, acquireTimeoutMs: this.o.connectTimeoutMs(), schema: SCHEMA, lockKey: SCHEMA_LOCK_KEY });
      // A failed opening is tried again by the next call (the database may come up later).
      this.opening = opening;
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
    }
    return this.opening;
  }

  private async read(): Promise<Row> {
    const knex = await this.db();
    const row = (await knex('team_settings').select('doc', 'version').where({ id: 1 }).first()) as Row | undefined;
    return row ?? { doc: '{}', version: 0 };
  }

  // ── Watching ──────────────────────────────────────────────────────────────────────────────

  private startWatching(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.check(), this.o.pollMs());
    this.timer.unref();
    void this.connect().catch((err) => {
      this.o.logger.warn(`settings LISTEN connection failed: ${(err as Error).message}; retrying`);
      void this.reconnect();
    });
  }

  private async connect(): Promise<void> {
    const pg = await loadPg();
    const client = new pg.Client({ connectionString: this.o.url, connectionTimeoutMillis: this.o.connectTimeoutMs() });
    await client.connect();
    if (this.closed) return void (await client.end().catch(() => {}));
    client.on('notification', (n) => {
      if (n.channel === SETTINGS_CHANNEL && Number(n.payload) > this.seen) void this.check();
    });
    const lost = (err?: Error) => {
      if (this.listener !== client || this.closed) return;
      this.listener = undefined;
      this.o.logger.warn(`the settings LISTEN connection was lost${err ? `: ${err.message}` : ''}; reconnecting`);
      void this.reconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.query(`LISTEN ${SETTINGS_CHANNEL}`);
    this.listener = client;
    // What was saved before we listened (or while we were away).
    void this.check();
  }

  private async reconnect(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    try {
      for (let delay = 100; !this.closed && !this.listener; delay = Math.min(delay * 2, 5000)) {
        await new Promise((r) => setTimeout(r, delay).unref());
        try {
          await this.connect();
        } catch (err) {
          this.o.logger.debug(`settings LISTEN reconnect failed: ${(err as Error).message}`);
        }
      }
    } finally {
      this.reconnecting = false;
    }
  }

  /** Read the row when it may be newer than what this process saw; deliver it if it is. */
  private async check(): Promise<void> {
    if (this.closed || !this.listeners.size) return;
    if (this.polling) return void (this.again = true);
    this.polling = true;
    this.again = false;
    try {
      const knex = await this.db();
      const v = (await knex('team_settings').select('version').where({ id: 1 }).first()) as { version: number } | undefined;
      if (!v || v.version <= this.seen) return;
      const row = await this.read();
      if (row.version <= this.seen || this.closed) return;
      this.seen = row.version;
      const doc = parseDoc(row.doc);
      for (const l of this.listeners) l(structuredClone(doc));
    } catch (err) {
      this.o.logger.debug(`reading the team settings failed: ${(err as Error).message}`);
    } finally {
      this.polling = false;
      // A doorbell rang while we read: the row may be newer than what we got.
      if (this.again) void this.check();
    }
  }
}

function parseDoc(text: string): Doc {
  const doc = JSON.parse(text) as unknown;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('the stored team settings are not a JSON object');
  return doc as Doc;
}

/**
 * A run whose owner died is closed exactly once, however many paths of one process reach it at
 * the same moment (two poll ticks' reapers, a send taking the conversation over). Real
 * PostgreSQL, one Team with a recording gateway; skipped with one line without PostgreSQL.
 */
import type { Knex } from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import type { GatewayService, LifecycleEvent, RuntimeApi } from '../../plugin-api.js';
import { openDatabase } from '../../plugins/history-postgres/database.js';
import { TEAM_DEFAULTS } from '../../plugins/team-fanout/index.js';
import { loadPg, openTeamDatabase } from '../../plugins/team-fanout/database.js';
import { Team } from '../../plugins/team-fanout/team.js';
import { postgresSkip, usePostgres } from '../helpers/postgres.js';

const pg = usePostgres();
const open: Knex[] = [];
afterEach(async () => {
  for (const k of open.splice(0)) await k.destroy();
});

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe.skipIf(!!postgresSkip)('closing a dead owner’s run (PostgreSQL)', () => {
  it('two reapers at once (and a send) log and publish one agent_end for it', async () => {
    const url = await pg.cluster().createDatabase();
    open.push(await openDatabase(url, { poolMax: 4, acquireTimeoutMs: 10_000, migrationLockTimeoutMs: 10_000 }));
    const knex = await openTeamDatabase(url, { poolMax: 6, acquireTimeoutMs: 10_000 });
    open.push(knex);
    const c = 'c_orphan';
    // Process A started a run, then died: its lease lapsed and its log has no agent_end.
    await knex.raw("INSERT INTO team_leases (conversation_id, owner, expires_at) VALUES (?, 'A', now() - interval '1 minute')", [c]);
    const start = { type: 'agent_start', conversationId: c, runId: 'r_dead', seq: 1, ts: 1 };
    await knex('team_events').insert({ conversation_id: c, seq: 1, type: 'agent_start', origin: 'A', ts: 1, event: JSON.stringify(start) });

    const published: LifecycleEvent[] = [];
    const gateway = { publishRemote: (e: LifecycleEvent) => published.push(e), notifyRemote() {}, setRemote: () => ({ dispose() {} }), registerHandler: () => ({ dispose() {} }), registerHttpRoute: () => ({ dispose() {} }), broadcast() {}, handleForwarded: async () => undefined } as unknown as GatewayService;
    const runtime = { activeRun: () => undefined } as unknown as RuntimeApi;
    const pgm = await loadPg();
    const team = new Team({ knex, listen: async () => new pgm.Client({ connectionString: url }), self: 'B', logger: quiet, runtime, gateway, limits: () => ({ ...TEAM_DEFAULTS }) });
    await team.log.catchUp(c);
    expect(team.running(c)).toBe(true);

    const reap = () => (team as unknown as { reap(): Promise<void> }).reap();
    await reap(); // the first poll finds the lease lapsed; the next closes the run
    await Promise.all([reap(), reap(), team.route({ action: 'send', conversationId: c, clientRequestId: 'x', text: 'again' } as never)]);

    const ends = published.filter((e) => e.type === 'agent_end');
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ runId: 'r_dead', status: 'error', error: { details: { ownerLost: true } } });
    // And one is written to the shared log, for the other processes.
    expect(await loggedEnds(knex, c)).toBe(1);
    expect(team.running(c)).toBe(false);
    await team.close();
  });
});

/** The log writes in batches: wait until an agent_end is in the table, then a little more; how many there are. */
async function loggedEnds(knex: Knex, c: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const n = (await knex('team_events').where({ conversation_id: c, type: 'agent_end' })).length;
    if (n > 0) {
      await new Promise((r) => setTimeout(r, 100));
      return (await knex('team_events').where({ conversation_id: c, type: 'agent_end' })).length;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return 0;
}

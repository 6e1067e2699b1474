/**
 * Tool permissions (issue 14): the `permissions` settings section decides, per tool call, allow,
 * ask or deny; an "ask" waits for whoever is connected (the WebUI through the gateway's
 * `chat_queue.tool_approval`, the CLI on stdin) and is denied at its deadline or when the run is
 * stopped. Provides the `permissions` service and `cli.interaction.permissions`. A factory: each
 * kernel gets its own pending table and grants. See docs/permissions.md.
 */
import { definePlugin } from '../../core/define-plugin.js';
import type { Plugin } from '../../plugin-api.js';
import { createCliInteraction } from './cli.js';
import { checkBefore, PolicyHolder, SessionGrants, waitForApproval } from './gate.js';
import { PendingApprovals } from './pending.js';
import { bootTolerantSchema } from './schema.js';
import { createService, PERMISSIONS_SERVICE } from './service.js';

/** Before other plugins' taps: a refused call never reaches user hooks, and no executeTool tap takes the call over first. */
const FIRST = -1000;

export default function permissionsPlugin(): Plugin {
  const schema = bootTolerantSchema();
  return definePlugin({
    name: 'permissions',
    settingsKey: 'permissions',
    settingsSchema: schema,
    apply(ctx) {
      schema.booted();
      const table = new PendingApprovals();
      const grants = new SessionGrants();
      let reported: string | undefined;
      const holder = new PolicyHolder(ctx.settings, (problem) => {
        if (problem === reported) return;
        reported = problem;
        ctx.reportFailure(`invalid settings (${problem}): every tool call is refused until they are fixed`);
      });
      holder.current(); // a broken section is reported at start-up, not at the first tool call
      const deps = { holder, table, grants, logger: ctx.logger };
      ctx.sessionHooks.beforeToolCall.tap((info) => checkBefore(deps, info), { stage: FIRST });
      ctx.sessionHooks.executeTool.tap((info, toolCtx) => waitForApproval(deps, info, toolCtx), { stage: FIRST });
      const service = createService(table, holder, grants);
      ctx.provide(PERMISSIONS_SERVICE, service);
      ctx.provide('cli.interaction.permissions', createCliInteraction(table, service));
      ctx.hooks.shutdown.tap(() => table.cancelAll('the host is shutting down'));
      ctx.subscriptions.push({ dispose: () => table.cancelAll('the permissions plugin was unloaded') });
    },
  });
}

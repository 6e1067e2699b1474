/**
 * The cron messages of the gateway protocol (docs/gateway-protocol.md, "Cron"): handlers the
 * cron plugin registers with the gateway's extension point, and the broadcasts of task changes
 * (`cron.tasks`, coalesced) and run starts and ends (`cron.run`).
 */
import { z } from 'zod';
import type { Disposable, PluginContext } from '../../plugin-api.js';
import type { CronService } from './service.js';
import { CronTaskError } from './tasks.js';
import { issueText } from './task-spec.js';

/** What the gateway service offers plugins (the subset used here). */
interface GatewayExtensionPoint {
  registerHandler(type: string, handler: (message: Record<string, unknown>) => unknown): Disposable;
  broadcast(name: string, data: unknown): void;
}

const base = { type: z.string(), id: z.string().min(1).max(200).optional() };
const taskId = z.string().min(1).max(200);
const Schemas = {
  'cron.list': z.strictObject({ ...base }),
  'cron.add': z.strictObject({ ...base, task: z.record(z.string(), z.unknown()) }),
  'cron.update': z.strictObject({ ...base, taskId, patch: z.record(z.string(), z.unknown()) }),
  'cron.remove': z.strictObject({ ...base, taskId }),
  'cron.runs': z.strictObject({ ...base, taskId, limit: z.number().int().min(1).max(1000).optional() }),
  'cron.preview': z.strictObject({ ...base, schedule: z.string().min(1).max(200), timezone: z.string().min(1).max(100).optional() }),
} as const;
type CronMessageType = keyof typeof Schemas;

function parse<T extends CronMessageType>(type: T, message: Record<string, unknown>): z.output<(typeof Schemas)[T]> {
  const r = Schemas[type].safeParse(message);
  if (!r.success) throw new CronTaskError('bad_request', issueText(r.error));
  return r.data as z.output<(typeof Schemas)[T]>;
}

export function registerGatewayHandlers(ctx: PluginContext, service: CronService): void {
  const gateway = ctx.service<Partial<GatewayExtensionPoint>>('gateway');
  if (!gateway || typeof gateway.registerHandler !== 'function' || typeof gateway.broadcast !== 'function') return;
  const gw = gateway as GatewayExtensionPoint;
  const handlers: { [K in CronMessageType]: (m: z.output<(typeof Schemas)[K]>) => Promise<unknown> } = {
    'cron.list': async () => ({ tasks: await service.listTasks() }),
    'cron.add': async (m) => ({ task: await service.addTask(m.task, 'gateway') }),
    'cron.update': async (m) => ({ task: await service.updateTask(m.taskId, m.patch) }),
    'cron.remove': async (m) => ({ taskId: (await service.removeTask(m.taskId)).id, removed: true }),
    'cron.runs': async (m) => service.runs(m.taskId, m.limit),
    'cron.preview': async (m) => service.preview(m.schedule, m.timezone),
  };
  for (const type of Object.keys(handlers) as CronMessageType[]) {
    const handle = handlers[type] as (m: unknown) => Promise<unknown>;
    ctx.subscriptions.push(gw.registerHandler(type, (message) => handle(parse(type, message))));
  }
  // A burst of changes (a catch-up recording many missed fires) is one list broadcast.
  let pending: NodeJS.Timeout | undefined;
  const sub = service.onChange((change) => {
    if (change.kind === 'run') return gw.broadcast('cron.run', { run: change.run });
    if (pending) return;
    pending = setTimeout(() => {
      pending = undefined;
      service.listTasks().then(
        (tasks) => gw.broadcast('cron.tasks', { tasks }),
        (err) => ctx.logger.warn(`listing cron tasks for the gateway failed: ${(err as Error).message}`),
      );
    }, 50);
    pending.unref();
  });
  ctx.subscriptions.push(sub, { dispose: () => clearTimeout(pending) });
}

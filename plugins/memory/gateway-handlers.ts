/**
 * The memory messages of the gateway protocol (docs/gateway-protocol.md, "Memory"), for the
 * WebUI Memory page: handlers registered with the gateway's extension point, and the
 * `memory.changed` broadcast after a change (coalesced; `proposed` says extraction added some).
 */
import { z } from 'zod';
import type { Disposable, PluginContext } from '../../plugin-api.js';
import type { MemoryChange, MemoryService } from './service.js';

/** What the gateway service offers plugins (the subset used here). */
interface GatewayExtensionPoint {
  registerHandler(type: string, handler: (message: Record<string, unknown>) => unknown): Disposable;
  broadcast(name: string, data: unknown): void;
}

/** A refusal with the gateway's reply code. */
class MemoryRequestError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found',
    message: string,
  ) {
    super(message);
  }
}

const base = { type: z.string(), id: z.string().min(1).max(200).optional() };
// The project scope is the one of this folder; the server's own (as for runs) when not given.
const workdir = z.string().min(1).max(4096).optional();
const memoryPath = z.string().min(1).max(4096);
const Schemas = {
  'memory.list': z.strictObject({ ...base, workdir }),
  'memory.read': z.strictObject({ ...base, path: memoryPath, workdir }),
  'memory.write': z.strictObject({ ...base, path: memoryPath, text: z.string().max(4 * 1024 * 1024), workdir }),
  'memory.delete': z.strictObject({ ...base, path: memoryPath, workdir }),
  'memory.accept': z.strictObject({ ...base, proposalId: z.string().min(1).max(200), path: memoryPath.optional(), text: z.string().max(64 * 1024).optional() }),
  'memory.dismiss': z.strictObject({ ...base, proposalId: z.string().min(1).max(200) }),
} as const;
type MemoryMessageType = keyof typeof Schemas;

function issueText(error: z.ZodError): string {
  const i = error.issues[0]!;
  const where = i.path.map(String).join('.');
  return where ? `${where}: ${i.message}` : i.message;
}

function parse<T extends MemoryMessageType>(type: T, message: Record<string, unknown>): z.output<(typeof Schemas)[T]> {
  const r = Schemas[type].safeParse(message);
  if (!r.success) throw new MemoryRequestError('bad_request', issueText(r.error));
  return r.data as z.output<(typeof Schemas)[T]>;
}

/** The store's refusals are written for the model; here they become reply codes. */
function asReply(err: unknown): unknown {
  if (err instanceof MemoryRequestError || !(err instanceof Error)) return err;
  const missing = /^The path (\S+) does not exist/.exec(err.message);
  if (missing) return new MemoryRequestError('not_found', `${missing[1]} does not exist`);
  if (/^no unreviewed memory with id/.test(err.message)) return new MemoryRequestError('not_found', err.message);
  if (err.name === 'ToolFailure' || /^the memory text is empty/.test(err.message)) return new MemoryRequestError('bad_request', err.message.replace(/^Refused: /, ''));
  return err;
}

export function registerGatewayHandlers(ctx: PluginContext, service: MemoryService): void {
  const gateway = ctx.service<Partial<GatewayExtensionPoint>>('gateway');
  if (!gateway || typeof gateway.registerHandler !== 'function' || typeof gateway.broadcast !== 'function') return;
  const gw = gateway as GatewayExtensionPoint;
  const wd = (w: string | undefined) => w ?? process.cwd();
  const handlers: { [K in MemoryMessageType]: (m: z.output<(typeof Schemas)[K]>) => Promise<unknown> } = {
    'memory.list': async (m) => {
      const [files, unreviewed] = await Promise.all([service.list({ workdir: wd(m.workdir) }), service.unreviewed()]);
      return { workdir: wd(m.workdir), files, unreviewed };
    },
    'memory.read': async (m) => ({ path: m.path, text: await service.read(m.path, { workdir: wd(m.workdir) }) }),
    'memory.write': async (m) => {
      await service.write(m.path, m.text, { workdir: wd(m.workdir) });
      return { path: m.path, written: true };
    },
    'memory.delete': async (m) => {
      await service.delete(m.path, { workdir: wd(m.workdir) });
      return { path: m.path, deleted: true };
    },
    // A proposal carries its own project folder; the path may move it to another file.
    'memory.accept': async (m) => ({
      proposalId: m.proposalId,
      path: await service.accept(m.proposalId, { ...(m.path ? { path: m.path } : {}), ...(m.text !== undefined ? { text: m.text } : {}) }),
    }),
    'memory.dismiss': async (m) => {
      if (!(await service.dismiss(m.proposalId))) throw new MemoryRequestError('not_found', `no unreviewed memory with id "${m.proposalId}"`);
      return { proposalId: m.proposalId, dismissed: true };
    },
  };
  for (const type of Object.keys(handlers) as MemoryMessageType[]) {
    const handle = handlers[type] as (m: unknown) => Promise<unknown>;
    ctx.subscriptions.push(
      gw.registerHandler(type, async (message) => {
        try {
          return await handle(parse(type, message));
        } catch (err) {
          throw asReply(err);
        }
      }),
    );
  }
  // An accept writes a file and shortens the list: one broadcast, which says how many wait.
  let pending: NodeJS.Timeout | undefined;
  let proposed = 0;
  let extracted: NonNullable<MemoryChange['extracted']>[] = [];
  const sub = service.onChange((change) => {
    proposed += change.proposed ?? 0;
    if (change.extracted) extracted.push(change.extracted);
    if (pending) return;
    pending = setTimeout(() => {
      pending = undefined;
      const added = proposed;
      const shown = extracted;
      proposed = 0;
      extracted = [];
      service.unreviewed().then(
        (items) => gw.broadcast('memory.changed', { unreviewed: items.length, ...(added ? { proposed: added } : {}), ...(shown.length ? { extracted: shown } : {}) }),
        (err) => ctx.logger.warn(`reading the unreviewed memories for the gateway failed: ${(err as Error).message}`),
      );
    }, 30);
    pending.unref();
  });
  ctx.subscriptions.push(sub, { dispose: () => clearTimeout(pending) });
}

/**
 * The skills messages of the gateway protocol (docs/gateway-protocol.md, "Skills"), for the
 * WebUI's Skills settings section: the skills found with their on/off state and the broken
 * ones, and a switch per skill (`skills.disabled` in settings). `skills.changed` is broadcast
 * whenever `skills.disabled` changes, from here or from any other edit of the settings.
 */
import { z } from 'zod';
import type { Disposable, PluginContext } from '../../plugin-api.js';
import { skillsSettings } from './settings.js';
import type { SkillsService } from './service.js';

/** What the gateway service offers plugins (the subset used here). */
interface GatewayExtensionPoint {
  registerHandler(type: string, handler: (message: Record<string, unknown>) => unknown): Disposable;
  broadcast(name: string, data: unknown): void;
}

class SkillsRequestError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found',
    message: string,
  ) {
    super(message);
  }
}

const base = { type: z.string(), id: z.string().min(1).max(200).optional() };
const workdir = z.string().min(1).max(4096).optional();
const Schemas = {
  'skills.list': z.strictObject({ ...base, workdir }),
  'skills.setEnabled': z.strictObject({ ...base, name: z.string().min(1).max(200), enabled: z.boolean(), workdir }),
} as const;
type SkillsMessageType = keyof typeof Schemas;

function parse<T extends SkillsMessageType>(type: T, message: Record<string, unknown>): z.output<(typeof Schemas)[T]> {
  const r = Schemas[type].safeParse(message);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.map(String).join('.');
    throw new SkillsRequestError('bad_request', where ? `${where}: ${i.message}` : i.message);
  }
  return r.data as z.output<(typeof Schemas)[T]>;
}

export function registerGatewayHandlers(ctx: PluginContext, service: SkillsService): void {
  const gateway = ctx.service<Partial<GatewayExtensionPoint>>('gateway');
  if (!gateway || typeof gateway.registerHandler !== 'function' || typeof gateway.broadcast !== 'function') return;
  const gw = gateway as GatewayExtensionPoint;
  // Project skills are the ones of this folder; the server's own (as for runs) when not given.
  const wd = (w: string | undefined) => ({ workdir: w ?? process.cwd() });
  const list = async (w: string | undefined) => {
    const [skills, problems] = await Promise.all([service.list(wd(w)), service.problems(wd(w))]);
    return { skills, problems, disabled: skillsSettings(ctx.settings.get()).disabled };
  };
  const handlers: { [K in SkillsMessageType]: (m: z.output<(typeof Schemas)[K]>) => Promise<unknown> } = {
    'skills.list': (m) => list(m.workdir),
    'skills.setEnabled': async (m) => {
      // Switching on a name no longer found is allowed: it clears a stale `skills.disabled` entry.
      if (!m.enabled && !(await service.list(wd(m.workdir))).some((s) => s.name === m.name)) {
        throw new SkillsRequestError('not_found', `no skill named "${m.name}"`);
      }
      await service.setEnabled(m.name, m.enabled);
      return list(m.workdir);
    },
  };
  for (const type of Object.keys(handlers) as SkillsMessageType[]) {
    const handle = handlers[type] as (m: unknown) => Promise<unknown>;
    ctx.subscriptions.push(gw.registerHandler(type, (message) => handle(parse(type, message))));
  }
  let last = JSON.stringify(skillsSettings(ctx.settings.get()).disabled);
  ctx.subscriptions.push(
    ctx.settings.onChange((settings) => {
      const disabled = skillsSettings(settings).disabled;
      const now = JSON.stringify(disabled);
      if (now === last) return;
      last = now;
      gw.broadcast('skills.changed', { disabled });
    }),
  );
}

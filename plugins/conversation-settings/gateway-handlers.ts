/**
 * The gateway messages of per-conversation settings (docs/gateway-protocol.md, "Conversation
 * settings"): `conversation.settings.get` and `conversation.settings.set`, and the
 * `conversation.settings` broadcast after a change, so every open tab of the conversation
 * follows it.
 */
import { z } from 'zod';
import type { Disposable, PluginContext } from '../../plugin-api.js';
import type { ConversationSettingsService } from './index.js';
import { ConversationSettingsPatchSchema } from './settings.js';

interface GatewayExtensionPoint {
  registerHandler(type: string, handler: (message: Record<string, unknown>) => unknown): Disposable;
  broadcast(name: string, data: unknown): void;
}

class RequestError extends Error {
  constructor(
    readonly code: 'bad_request' | 'not_found' | 'unavailable',
    message: string,
  ) {
    super(message);
  }
}

const conversationId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'conversationId: must be 1-128 letters, digits, _ or -');
const base = { type: z.string(), id: z.string().min(1).max(200).optional(), conversationId };
const GetSchema = z.strictObject(base);
const SetSchema = z.strictObject({ ...base, settings: ConversationSettingsPatchSchema });

function parse<T>(schema: z.ZodType<T>, message: unknown): T {
  const r = schema.safeParse(message);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  const where = i.path.map(String).join('.');
  throw new RequestError('bad_request', where && !i.message.startsWith(`${String(i.path.at(-1))}:`) ? `${where}: ${i.message}` : i.message);
}

export function registerGatewayHandlers(ctx: PluginContext, service: ConversationSettingsService): void {
  const gateway = ctx.service<Partial<GatewayExtensionPoint>>('gateway');
  if (!gateway || typeof gateway.registerHandler !== 'function' || typeof gateway.broadcast !== 'function') return;
  const gw = gateway as GatewayExtensionPoint;
  const unknown = (id: string) => new RequestError('not_found', `unknown conversation "${id}"`);
  ctx.subscriptions.push(
    gw.registerHandler('conversation.settings.get', async (message) => {
      const m = parse(GetSchema, message);
      const settings = await service.get(m.conversationId);
      if (!settings) throw unknown(m.conversationId);
      return { conversationId: m.conversationId, settings };
    }),
    gw.registerHandler('conversation.settings.set', async (message) => {
      const m = parse(SetSchema, message);
      const settings = await service.set(m.conversationId, m.settings);
      if (!settings) throw unknown(m.conversationId);
      gw.broadcast('conversation.settings', { conversationId: m.conversationId, settings });
      return { conversationId: m.conversationId, settings };
    }),
  );
}

/**
 * conversation-settings: per-conversation instructions and remembered composer choices
 * (settings.ts). The instructions are a system part just after USER_SETTINGS (the user's own
 * system prompt and the project's instruction files; rebuilt for every request, so a compaction never summarizes them away and
 * changing them applies from the next request on). The WebUI reads and writes them with the
 * gateway messages of gateway-handlers.ts.
 *
 * They are read from the store once per run (its first request) and kept in memory; a change
 * through the gateway updates what the run in progress uses at its next round.
 */
import type { JsonObject, PluginContext } from '../../plugin-api.js';
import { definePlugin, SystemPromptStages } from '../../core/define-plugin.js';
import { registerGatewayHandlers } from './gateway-handlers.js';
import { applyPatch, instructionsPart, META_KEY, settingsFromMeta, type ConversationSettings, type ConversationSettingsPatch } from './settings.js';

/** The subset of the history service used here. */
export interface MetaStore {
  getConversation(id: string, page?: { limit?: number }): Promise<{ meta: JsonObject } | undefined>;
  setConversationMeta(id: string, patch: JsonObject): Promise<JsonObject | undefined>;
}

/** Conversations whose settings are held in memory (least recently used go first). */
const MAX_HELD = 500;

export class ConversationSettingsService {
  private readonly held = new Map<string, { runId?: string; settings: ConversationSettings }>();
  /** Changes to a conversation whose first run has started but is not stored yet (its reply raced the store). */
  private readonly pending = new Map<string, ConversationSettingsPatch>();

  constructor(
    private readonly store: () => MetaStore | undefined,
    private readonly running: (conversationId: string) => boolean = () => false,
  ) {}

  /** The stored settings; undefined when the conversation is unknown (or nothing stores history). */
  async get(conversationId: string): Promise<ConversationSettings | undefined> {
    const c = await this.store()?.getConversation(conversationId, { limit: 1 });
    if (!c) return undefined;
    const settings = settingsFromMeta(c.meta);
    this.hold(conversationId, { settings, ...(this.held.get(conversationId)?.runId ? { runId: this.held.get(conversationId)!.runId! } : {}) });
    return settings;
  }

  /** Apply a change; undefined when the conversation is unknown. */
  async set(conversationId: string, patch: ConversationSettingsPatch): Promise<ConversationSettings | undefined> {
    const store = this.store();
    const current = await this.get(conversationId);
    if (store && !current && this.running(conversationId)) {
      // A new conversation's first message is stored just after its run starts: keep the change for then.
      this.pending.set(conversationId, { ...this.pending.get(conversationId), ...patch });
      const next = applyPatch(this.held.get(conversationId)?.settings ?? {}, patch);
      this.hold(conversationId, { settings: next });
      return next;
    }
    if (!store || !current) return undefined;
    const next = applyPatch(current, patch);
    // Meta takes a JSON merge patch (nested objects merge): a removed key is sent as null.
    const wire: JsonObject = {};
    for (const k of new Set([...Object.keys(current), ...Object.keys(next)])) wire[k] = (next as Record<string, string | undefined>)[k] ?? null;
    const meta = await store.setConversationMeta(conversationId, { [META_KEY]: wire });
    if (!meta) return undefined;
    this.hold(conversationId, { settings: next, ...(this.held.get(conversationId)?.runId ? { runId: this.held.get(conversationId)!.runId! } : {}) });
    return next;
  }

  /** The instructions a run uses: read at its first request, then what is held. */
  async forRun(conversationId: string, runId: string): Promise<string | undefined> {
    const h = this.held.get(conversationId);
    if (h && h.runId === runId) return h.settings.instructions;
    let settings: ConversationSettings = {};
    try {
      const c = await this.store()?.getConversation(conversationId, { limit: 1 });
      // Not stored (no history store): what a preset or a change left in memory stands.
      settings = c ? settingsFromMeta(c.meta) : (h?.settings ?? {});
    } catch {
      settings = h?.settings ?? {};
    }
    this.hold(conversationId, { runId, settings });
    return settings.instructions;
  }

  /**
   * A new conversation's settings, given with its first message before anything is stored: held
   * for its first request and stored with its first message (flush).
   */
  preset(conversationId: string, patch: ConversationSettingsPatch): void {
    this.pending.set(conversationId, { ...this.pending.get(conversationId), ...patch });
    this.hold(conversationId, { settings: applyPatch(this.held.get(conversationId)?.settings ?? {}, patch) });
  }

  /** Store what {@link set} kept while the conversation was not stored yet. */
  async flush(conversationId: string): Promise<void> {
    const patch = this.pending.get(conversationId);
    if (!patch) return;
    this.pending.delete(conversationId);
    await this.set(conversationId, patch);
  }

  forget(conversationId: string): void {
    this.held.delete(conversationId);
  }

  private hold(id: string, entry: { runId?: string; settings: ConversationSettings }): void {
    this.held.delete(id);
    this.held.set(id, entry);
    if (this.held.size > MAX_HELD) this.held.delete(this.held.keys().next().value!);
  }
}

export default definePlugin({
  name: 'conversation-settings',
  version: '0.1.0',
  apply(ctx: PluginContext) {
    const service = new ConversationSettingsService(
      () => ctx.service<MetaStore>('history'),
      (id) => !!ctx.runtime.activeRun(id),
    );
    ctx.provide('conversationSettings', service);
    ctx.sessionHooks.systemPrompt.tap(
      async (parts, rctx) => {
        const part = instructionsPart(await service.forRun(rctx.conversationId, rctx.runId));
        return part ? [...parts, part] : parts;
      },
      // After the user's system prompt and the project's files (USER_SETTINGS): the most specific words win.
      { stage: SystemPromptStages.USER_SETTINGS + 50 },
    );
    // After the store's own tap (this plugin loads after it), so the conversation exists.
    ctx.sessionHooks.saveUserMessage.tap((_message, info) => service.flush(info.conversationId));
    ctx.sessionHooks.turnEnd.tap((result) => service.flush(result.conversationId));
    ctx.hooks.ready.tap(() => registerGatewayHandlers(ctx, service));
  },
});

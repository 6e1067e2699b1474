/**
 * memory: long-term memory as Markdown files, in two scopes (paths.ts): the user's under
 * `$LIVEAGENT_HOME/memory/` and the project's under `<workdir>/.liveagent/memory/`.
 *
 * - The `Memory` tool (tool.ts) edits them with the commands of Anthropic's memory tool.
 * - The overview (overview.ts), an index of the files, is placed in the system prompt at
 *   stage MEMORY as it was at the conversation's first turn (pinned-overview.ts): the cached
 *   prompt prefix never changes under a conversation. What changed since goes as a short
 *   `<memory-update>` on the newest user message, worked out once per run.
 * - Silent extraction (extractor.ts) proposes memories after completed turns into an
 *   unreviewed list, for the user to accept; it never writes memory files.
 * - The `memory` service (service.ts) serves the WebUI Memory page, through the gateway
 *   messages `memory.*` (gateway-handlers.ts).
 *
 * Settings: the top-level `memory` section (settings.ts, docs/settings.md), read for every run.
 */
import type { RequestContext, SystemPart } from '../../plugin-api.js';
import { definePlugin, MessageStages, SystemPromptStages } from '../../core/define-plugin.js';
import { Extractor } from './extractor.js';
import { ExtractionHandoff } from './handoff.js';
import { listAll } from './files.js';
import { overviewText } from './overview.js';
import { memoryUpdateText, OverviewPins, UpdateAttacher, type MetaStore } from './pinned-overview.js';
import { userRoot } from './paths.js';
import { registerGatewayHandlers } from './gateway-handlers.js';
import { createMemoryService, MEMORY_SERVICE, MemoryChanges } from './service.js';
import { memorySettings, MemorySettingsSchema } from './settings.js';
import { MemoryStore } from './store.js';
import { memoryTool } from './tool.js';
import { UnreviewedList } from './unreviewed.js';

const MAX_RUNS = 64;

export default definePlugin({
  name: 'memory',
  version: '0.1.0',
  settingsKey: 'memory',
  settingsSchema: MemorySettingsSchema,
  apply(ctx) {
    const boot = ctx.config;
    const settings = () => memorySettings(ctx.settings.get(), boot);
    const home = ctx.paths.home;
    const store = new MemoryStore(home, () => settings().maxFileBytes);
    const list = new UnreviewedList(userRoot(home));

    const changes = new MemoryChanges((m) => ctx.logger.warn(m));
    // The model's edits are changes too (an open Memory page shows them).
    const tool = memoryTool(store);
    ctx.registerTool({
      ...tool,
      execute: async (args, tctx) => {
        const result = await tool.execute(args, tctx);
        if (args.command !== 'view' && !result.isError) changes.emit({ kind: 'files', path: args.path ?? args.new_path });
        return result;
      },
    });
    ctx.sessionHooks.tools.tap((tools, rctx) => (memorySettings(rctx.settings, boot).enabled ? tools : tools.filter((t) => t.name !== 'Memory')));

    // Worked out once per run, at its first request: later rounds reuse it, so a memory the
    // model writes mid-run changes neither the prompt nor the update under it.
    const pins = new OverviewPins(() => ctx.service<MetaStore>('history'), ctx.logger);
    const attacher = new UpdateAttacher();
    const perRun = new Map<string, Promise<{ part?: SystemPart; update?: string }>>();
    const runMemory = (rctx: RequestContext, s: ReturnType<typeof settings>) => {
      let found = perRun.get(rctx.runId);
      if (!found) {
        const tool = rctx.tools.some((t) => t.name === 'Memory');
        found = listAll({ home, workdir: rctx.workdir }).then(
          async (files) => {
            const pinned = await pins.pinFor(rctx.conversationId, files);
            const text = overviewText(pinned, { maxLines: s.overviewMaxLines, maxBytes: s.overviewMaxBytes }, tool);
            const update = memoryUpdateText(pinned, files);
            return { ...(text ? { part: { id: 'memory', text } } : {}), ...(update ? { update } : {}) };
          },
          (err: unknown) => {
            ctx.logger.warn(`cannot read the memory folders: ${(err as Error)?.message ?? String(err)}`);
            return {};
          },
        );
        perRun.set(rctx.runId, found);
        if (perRun.size > MAX_RUNS) perRun.delete(perRun.keys().next().value!);
      }
      return found;
    };
    ctx.sessionHooks.systemPrompt.tap(
      async (parts, rctx) => {
        const s = memorySettings(rctx.settings, boot);
        if (!s.enabled) return parts;
        const { part } = await runMemory(rctx, s);
        return part ? [...parts, part] : parts;
      },
      { stage: SystemPromptStages.MEMORY },
    );
    ctx.sessionHooks.messages.tap(
      async (messages, rctx) => {
        const s = memorySettings(rctx.settings, boot);
        if (!s.enabled) return messages;
        const { update } = await runMemory(rctx, s);
        return update ? attacher.attach(messages, update) : messages;
      },
      // Before the context policy, so what it does to the newest message sees the update too.
      { stage: MessageStages.CONTEXT_POLICY - 10 },
    );

    const extractor = new Extractor({
      runtime: ctx.runtime,
      logger: ctx.logger,
      settings,
      list,
      files: (workdir) => listAll({ home, workdir }),
      reportFailure: (message) => ctx.reportFailure(message),
      handoff: new ExtractionHandoff(userRoot(home), (message) => ctx.logger.warn(message)),
      proposed: (added, info) =>
        changes.emit({
          kind: 'unreviewed',
          proposed: added.length,
          // agent-dev shows what was extracted (the spec's "silent-memory detail shown").
          ...(info.agentDev ? { extracted: { conversationId: info.conversationId, items: added.map((a) => ({ id: a.id, text: a.text, scope: a.scope, ...(a.file ? { file: a.file } : {}) })) } } : {}),
        }),
    });
    ctx.sessionHooks.saveUserMessage.tap((message, session) => {
      extractor.userMessage(message, session);
    });
    ctx.sessionHooks.turnEnd.tap((result, session) => {
      perRun.delete(result.runId);
      extractor.turnEnded(result, session);
    });
    ctx.hooks.shutdown.tap(() => extractor.shutdown());
    // Turns an earlier host stopped before extracting (a one-shot CLI's) are read now.
    ctx.hooks.ready.tap(() => {
      void extractor.resume().catch((err: unknown) => ctx.logger.warn(`resuming memory extraction failed: ${(err as Error)?.message ?? String(err)}`));
    });

    const service = createMemoryService(store, list, home, () => extractor.whenIdle(), changes);
    ctx.provide(MEMORY_SERVICE, service);
    // The gateway may load after this plugin: its handlers are registered once every plugin is in.
    ctx.hooks.ready.tap(() => registerGatewayHandlers(ctx, service));
  },
});

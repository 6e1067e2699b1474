/**
 * The runtime API that hosts and plugins drive conversations through: provider and model
 * resolution, run start with duplicate-request protection, and fan-out of every event.
 */
import path from 'node:path';
import { z } from 'zod';
import type {
  CompactionOutcome,
  CompletionOptions,
  CompletionResult,
  Disposable,
  LifecycleEvent,
  ModelFacts,
  ModelInfo,
  Provider,
  RequestContext,
  RunHandle,
  RunOptions,
  RuntimeApi,
  RuntimePaths,
  SettingsStore,
  ToolDefinition,
} from '../plugin-api.js';
import { askCompaction } from './compaction.js';
import { complete } from './completion.js';
import { UsageError } from './errors.js';
import type { KernelHooks, SessionHooks } from './hooks.js';
import { CONVERSATION_ID_PATTERN, newConversationId, newRunId } from './ids.js';
import { modelFacts, modelsOf } from './model-facts.js';
import type { Logger } from '../plugin-api.js';
import type { ProviderRegistry, ToolRegistry } from './registries.js';
import { Run } from './run.js';
import { loadWindow, type SessionManager } from './sessions.js';

const RunOptionsSchema = z.object({
  conversationId: z.string().regex(CONVERSATION_ID_PATTERN, 'must be 1-128 letters, digits, _ or -').optional(),
  input: z.array(z.object({ type: z.string() }).passthrough()).optional(),
  mode: z.enum(['text', 'tools', 'agent-dev']).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  workdir: z.string().min(1).optional(),
  clientRequestId: z.string().min(1).max(200).optional(),
  truncateFromMessageId: z.string().min(1).optional(),
  keepEvents: z.boolean().optional(),
});

export interface RuntimeDeps {
  kernelHooks: KernelHooks;
  sessionHooks: SessionHooks;
  tools: ToolRegistry;
  providers: ProviderRegistry;
  settings: SettingsStore;
  paths: RuntimePaths;
  logger: Logger;
  sessions: SessionManager;
}

export class Runtime implements RuntimeApi {
  private listeners = new Set<(e: LifecycleEvent) => void>();
  private readonly d: RuntimeDeps;

  constructor(deps: RuntimeDeps) {
    // PROXY injection: keep the cradle and read services lazily.
    this.d = deps;
  }

  tools(): ToolDefinition[] {
    return this.d.tools.list().map((e) => e.tool);
  }

  providers(): Provider[] {
    return this.d.providers.list();
  }

  provider(id: string): Provider | undefined {
    return this.d.providers.get(id);
  }

  models(providerId: string): ModelInfo[] {
    return modelsOf(this.d.providers.get(providerId), this.d.settings.get());
  }

  modelInfo(providerId: string, modelId: string): ModelFacts {
    return modelFacts(this.models(providerId), modelId);
  }

  /** The provider a request without `--provider` uses: the settings default, else the first configured. */
  defaultProvider(): Provider | undefined {
    const settings = this.d.settings.get();
    if (settings.defaultProvider) return this.d.providers.get(settings.defaultProvider);
    return this.d.providers.list().find((p) => safeConfigured(p, settings));
  }

  resolveModel(provider: Provider, model?: string): string {
    if (model) return model;
    const settings = this.d.settings.get();
    const defaultProvider = settings.defaultProvider ? this.d.providers.get(settings.defaultProvider) : undefined;
    if (settings.defaultModel && defaultProvider === provider) return settings.defaultModel;
    const ps = settings.providers?.[provider.id]?.defaultModel;
    return typeof ps === 'string' && ps ? ps : provider.defaultModel;
  }

  startRun(options: RunOptions): RunHandle {
    const parsed = RunOptionsSchema.safeParse(options);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw new UsageError(`invalid run options: ${i.path.join('.') || '(options)'}: ${i.message}`);
    }
    const settings = this.d.settings.get();
    let provider: Provider | undefined;
    if (options.provider) {
      provider = this.d.providers.get(options.provider);
      if (!provider) throw new UsageError(`unknown provider "${options.provider}" (known: ${this.knownProviders()})`);
    } else {
      provider = this.defaultProvider();
      if (!provider) {
        if (settings.defaultProvider) throw new UsageError(`unknown provider "${settings.defaultProvider}" in settings.defaultProvider (known: ${this.knownProviders()})`);
        throw new UsageError('no provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or add a provider in settings.json');
      }
    }
    const isNew = !options.conversationId;
    const session = this.d.sessions.get(options.conversationId ?? newConversationId());
    if (options.clientRequestId) {
      const earlier = this.d.sessions.runForRequest(session.conversationId, options.clientRequestId);
      if (earlier) return earlier;
    }
    if (session.activeRun) throw new UsageError(`conversation "${session.conversationId}" already has a run in progress`);
    if (isNew) session.known = true;
    const run = new Run(
      { hooks: this.d.sessionHooks, tools: this.d.tools, settings, paths: this.d.paths, logger: this.d.logger, sessions: this.d.sessions, publish: (e) => this.publish(e) },
      {
        session,
        isNew,
        ...(options.input ? { input: options.input } : {}),
        ...(options.truncateFromMessageId ? { truncateFromMessageId: options.truncateFromMessageId } : {}),
        mode: options.mode ?? settings.defaultMode ?? 'tools',
        provider,
        model: this.resolveModel(provider, options.model),
        workdir: path.resolve(options.workdir ?? process.cwd()),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.keepEvents === false ? { keepEvents: false } : {}),
      },
    );
    this.d.sessions.begin(session, run, options.clientRequestId);
    return run;
  }

  activeRun(conversationId: string): RunHandle | undefined {
    return this.d.sessions.peek(conversationId)?.activeRun;
  }

  async forgetConversation(conversationId: string): Promise<void> {
    const session = this.d.sessions.peek(conversationId);
    if (!session) return;
    const run = session.activeRun;
    if (run) {
      run.abort('conversation deleted', { reason: 'conversation_deleted' });
      await run.result;
    }
    this.d.sessions.drop(conversationId);
  }

  async deleteConversation(conversationId: string): Promise<boolean> {
    checkId('deleteConversation', conversationId);
    const knownHere = !!this.d.sessions.peek(conversationId)?.known;
    // Stop the run first, or its final round would write into (and recreate) the conversation.
    await this.forgetConversation(conversationId);
    const hooks = this.d.sessionHooks;
    const stored = hooks.deleteConversation.isUsed() ? await hooks.deleteConversation.promise({ conversationId }) : undefined;
    const existed = stored === true || knownHere;
    const kernelHooks = this.d.kernelHooks;
    if (kernelHooks.conversationDeleted.isUsed()) kernelHooks.conversationDeleted.call({ conversationId, existed });
    return existed;
  }

  async renameConversation(conversationId: string, title: string): Promise<boolean> {
    checkId('renameConversation', conversationId);
    const t = typeof title === 'string' ? title.trim() : '';
    if (!t) throw new UsageError('renameConversation: title: must not be empty');
    if (t.length > 200) throw new UsageError('renameConversation: title: must be at most 200 characters');
    const hooks = this.d.sessionHooks;
    if (!hooks.renameConversation.isUsed()) return false;
    return (await hooks.renameConversation.promise({ conversationId, title: t })) === true;
  }

  async compact(conversationId: string, options: { signal?: AbortSignal } = {}): Promise<CompactionOutcome> {
    if (typeof conversationId !== 'string' || !CONVERSATION_ID_PATTERN.test(conversationId)) throw new UsageError('compact: conversationId must be 1-128 letters, digits, _ or -');
    const session = this.d.sessions.get(conversationId);
    if (session.activeRun) throw new UsageError(`conversation "${conversationId}" has a run in progress (it compacts itself when it needs to)`);
    if (session.compacting) throw new UsageError(`conversation "${conversationId}" is already being compacted`);
    let release!: () => void;
    session.compacting = new Promise<void>((r) => (release = r));
    try {
      const hooks = this.d.sessionHooks;
      const { window, snapshot } = await loadWindow(hooks, session, false);
      if (window.length === 0) return { status: 'skipped', conversationId, reason: 'there is nothing to compact' };
      const settings = this.d.settings.get();
      const provider = (snapshot?.provider ? this.d.providers.get(snapshot.provider) : undefined) ?? this.defaultProvider();
      if (!provider) throw new UsageError('no provider is configured to write the summary');
      const model = snapshot?.model && provider.id === snapshot.provider ? snapshot.model : this.resolveModel(provider);
      const runId = newRunId();
      const ctx: RequestContext = {
        conversationId,
        runId,
        round: 0,
        mode: settings.defaultMode ?? 'tools',
        provider,
        model,
        workdir: process.cwd(),
        settings,
        tools: [],
        signal: options.signal ?? new AbortController().signal,
        ...(session.checkpoint ? { checkpoint: session.checkpoint } : {}),
      };
      const emit = (e: Parameters<Parameters<typeof askCompaction>[0]['emit']>[0]) => {
        const ev = { ...e, conversationId, runId, seq: ++session.lastSeq, ts: Date.now() } as LifecycleEvent;
        if (hooks.event.isUsed()) hooks.event.call(ev);
        this.publish(ev);
      };
      const step = await askCompaction({ hooks, session, ctx, logger: this.d.logger, emit }, { trigger: 'manual', force: true, window });
      if (step.kind === 'compacted') return { status: 'compacted', conversationId, checkpoint: step.checkpoint };
      if (step.kind === 'failed') return { status: 'failed', conversationId, reason: step.reason };
      return { status: 'skipped', conversationId, reason: hooks.compaction.isUsed() ? 'the compaction plugin found nothing to compact' : 'no compaction plugin is loaded' };
    } finally {
      session.compacting = undefined;
      release();
      this.d.sessions.evictIdle();
    }
  }

  complete(options: CompletionOptions): Promise<CompletionResult> {
    return complete({ provider: (id) => this.d.providers.get(id), settings: () => this.d.settings.get() }, options);
  }

  onEvent(listener: (event: LifecycleEvent) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private publish(e: LifecycleEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.d.logger.error('an event listener failed', err);
      }
    }
  }

  private knownProviders(): string {
    return this.d.providers.list().map((p) => p.id).join(', ') || 'none loaded';
  }
}

function checkId(what: string, conversationId: unknown): void {
  if (typeof conversationId !== 'string' || !CONVERSATION_ID_PATTERN.test(conversationId)) throw new UsageError(`${what}: conversationId must be 1-128 letters, digits, _ or -`);
}

function safeConfigured(p: Provider, settings: ReturnType<SettingsStore['get']>): boolean {
  try {
    return p.isConfigured(settings);
  } catch {
    return false;
  }
}

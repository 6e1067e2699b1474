/**
 * One run: a user request from `agent_start` to `agent_end`. text mode streams one reply; the
 * tool modes loop (model → tool calls → results → model) until the model stops or the round
 * limit is hit. Every step goes through the session hooks, every step emits its lifecycle event,
 * and an AbortSignal can stop it anywhere.
 */
import type {
  ContentBlock,
  EditedFile,
  ExecutionMode,
  JsonObject,
  LifecycleEvent,
  Logger,
  Message,
  MessageDelta,
  Provider,
  ProviderRequest,
  RequestContext,
  RunHandle,
  RunInfo,
  RunResult,
  RuntimeErrorInfo,
  RuntimePaths,
  Settings,
  ToolCallBlock,
  ToolDefinition,
  Usage,
} from '../plugin-api.js';
import { askCompaction, contextPayload, type CompactionAsk, type CompactionStep } from './compaction.js';
import { CancelledError, UsageError, toErrorInfo } from './errors.js';
import { EventLog } from './event-queue.js';
import type { SessionHooks } from './hooks.js';
import { newMessageId, newRunId } from './ids.js';
import { addUsage } from './message-assembler.js';
import { costOf, modelFacts, modelsOf } from './model-facts.js';
import { requestOptions } from './provider-call.js';
import { streamRound, type RoundEnv } from './round-stream.js';
import type { ToolRegistry } from './registries.js';
import { loadWindow, type Session, type SessionManager } from './sessions.js';
import { dispatchToolCalls } from './tool-dispatch.js';
import type { EventInput } from './types.js';

/** The user turn the kernel adds after a reply was stopped to compact mid-stream (stored, marked synthetic). */
export const CONTINUE_AFTER_COMPACTION =
  'Your previous reply was cut off so that the context could be compacted. Continue it exactly where it stopped, without repeating what you already wrote.';

export interface RunDeps {
  hooks: SessionHooks;
  tools: ToolRegistry;
  settings: Settings;
  paths: RuntimePaths;
  logger: Logger;
  sessions: SessionManager;
  /** Fan-out to runtime listeners (gateway, hosts). Must not block. */
  publish(event: LifecycleEvent): void;
}

export interface ResolvedRun {
  session: Session;
  isNew: boolean;
  input?: ContentBlock[];
  truncateFromMessageId?: string;
  mode: ExecutionMode;
  provider: Provider;
  model: string;
  workdir: string;
  signal?: AbortSignal;
  keepEvents?: boolean;
}

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 };

export class Run implements RunHandle {
  readonly runId = newRunId();
  readonly conversationId: string;
  readonly log: EventLog<LifecycleEvent>;
  readonly events: AsyncIterable<LifecycleEvent>;
  readonly result: Promise<RunResult>;
  private readonly controller = new AbortController();
  private readonly produced: Message[] = [];
  private usage: Usage = { ...ZERO_USAGE };
  private editedFiles: EditedFile[] = [];
  /** The active window: what the next request carries (after a checkpoint, only what it keeps). */
  private window: Message[] = [];
  /** A reply is stopped to compact mid-stream at most once per run. */
  private midStreamUsed = false;

  constructor(private readonly deps: RunDeps, private readonly opts: ResolvedRun) {
    this.conversationId = opts.session.conversationId;
    this.log = new EventLog<LifecycleEvent>(opts.keepEvents !== false);
    this.events = this.log;
    const outer = opts.signal;
    const onAbort = () => this.abort('signal');
    if (outer?.aborted) this.controller.abort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    // The caller's signal may outlive the run by far (a host-wide one): let go of the run when it ends.
    // Started on the next microtask, once the runtime has made this the session's active run
    // (persistence taps then see `SessionInfo.run` from the first load on).
    this.result = Promise.resolve()
      .then(() => this.execute())
      .finally(() => outer?.removeEventListener('abort', onAbort));
  }

  /** What this run is running with (SessionInfo.run while it is active). */
  get info(): RunInfo {
    return { runId: this.runId, mode: this.opts.mode, provider: this.opts.provider.id, model: this.opts.model, workdir: this.opts.workdir };
  }

  /** `details` go on the signal's CancelledError (the runtime's documented stop causes, e.g. `{ reason: 'conversation_deleted' }`). */
  abort(reason = 'stopped', details?: JsonObject): void {
    if (this.controller.signal.aborted) return;
    this.stopCause = reason;
    this.controller.abort(new CancelledError(`The run was stopped (${reason})`, details));
  }

  /** Why the run was aborted (`stopped` by a user, `shutdown` of the host, ...). */
  private stopCause: string | undefined;

  // ── Crash guard (core/kernel-crashes.ts) ──
  /** Set when a plugin's code failed asynchronously for this run. */
  private failure: RuntimeErrorInfo | undefined;

  /** End the run with `error`: it stops as `abort` does, then ends with that error event and agent_end status 'error'. */
  fail(error: RuntimeErrorInfo): void {
    if (this.failure) return;
    this.failure = error;
    this.abort('a plugin failed');
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  private emit(e: EventInput): void {
    this.dispatch({ ...e, conversationId: this.conversationId, runId: this.runId, seq: ++this.opts.session.lastSeq, ts: Date.now() } as LifecycleEvent);
  }

  /**
   * The hot path: one message_update per streamed delta. Built as one literal of a fixed shape
   * (no spread), which keeps V8 on a single hidden class for the most frequent event.
   */
  private emitDelta(messageId: string, delta: MessageDelta): void {
    this.dispatch({ type: 'message_update', messageId, delta, conversationId: this.conversationId, runId: this.runId, seq: ++this.opts.session.lastSeq, ts: Date.now() });
  }

  /** What streaming a round needs of the run (core/round-stream.ts). */
  private get roundEnv(): RoundEnv {
    return {
      provider: this.opts.provider,
      model: this.opts.model,
      session: this.opts.session,
      hooks: this.deps.hooks,
      tools: this.deps.tools,
      settings: this.deps.settings,
      logger: this.deps.logger,
      signal: this.signal,
      emit: (e) => this.emit(e),
      emitDelta: (id, d) => this.emitDelta(id, d),
    };
  }

  private dispatch(ev: LifecycleEvent): void {
    this.log.push(ev);
    if (this.deps.hooks.event.isUsed()) this.deps.hooks.event.call(ev);
    this.deps.publish(ev);
  }

  private async execute(): Promise<RunResult> {
    const { session } = this.opts;
    let status: RunResult['status'] = 'completed';
    let error: RuntimeErrorInfo | undefined;
    let started = false;
    try {
      // Let the provider start importing its SDK while the history loads.
      try {
        this.opts.provider.prepare?.();
      } catch {
        /* a hint only: stream() reports real failures */
      }
      // A manual compaction in progress rewrites the window this run is about to load.
      if (session.compacting) await session.compacting;
      this.window = await this.loadHistory();
      session.known = true;
      started = true;
      const userMessage = this.opts.input ? this.userMessage(this.opts.input) : undefined;
      this.emit({ type: 'agent_start', mode: this.opts.mode, provider: this.opts.provider.id, model: this.opts.model, ...(userMessage ? { userMessage } : {}) });
      if (userMessage) await this.addUserMessage(userMessage);
      status = await this.loop();
    } catch (err) {
      status = this.signal.aborted && !(err instanceof UsageError) ? 'aborted' : 'error';
      error = toErrorInfo(err);
      if (started && !this.failure) this.emit({ type: 'error', error });
    }
    // Crash guard: the plugin's failure is why the run stopped, not the abort it caused.
    if (this.failure) {
      status = 'error';
      error = this.failure;
      if (started) this.emit({ type: 'error', error });
    }
    if (status === 'error' && !error) error = this.lastError;
    const result: RunResult = { status, conversationId: this.conversationId, runId: this.runId, messages: this.produced, usage: this.usage };
    if (error) result.error = error;
    if (this.editedFiles.length) result.editedFiles = this.editedFiles;
    if (started) {
      this.emit({ type: 'agent_end', status, usage: this.usage, ...(error ? { error } : {}), ...(this.editedFiles.length ? { editedFiles: this.editedFiles } : {}) });
    }
    this.log.close();
    // A completed run's window is exactly what it stored: the next turn may go on from it.
    if (status === 'completed' && this.stamp !== undefined) this.deps.sessions.hold(session, this.window, this.stamp);
    this.window = [];
    // The run is over before its turnEnd taps run (titles, memory, hooks: core/after-turn.ts), so
    // the next message never waits for them. They see the session as it ended (with `run`).
    const info = session.info();
    this.deps.sessions.finish(session, this);
    if (started) this.deps.sessions.afterTurn.schedule(result, info);
    return result;
  }

  private lastError: RuntimeErrorInfo | undefined;
  /** The store's stamp of the window loaded; cleared when a compaction replaces the window. */
  private stamp: string | undefined;

  private async addUserMessage(message: Message): Promise<void> {
    await this.deps.hooks.saveUserMessage.promise(message, this.opts.session.info());
    this.opts.session.remember(message);
    this.window.push(message);
  }

  private async loadHistory(): Promise<Message[]> {
    const { session } = this.opts;
    const hooks = this.deps.hooks;
    let { window: messages, snapshot } = await loadWindow(hooks, session, this.opts.isNew);
    // A conversation this run creates has no stored window yet: its stamp is '' (the contract's).
    this.stamp = snapshot ? snapshot.stamp : hooks.loadHistory.isUsed() ? '' : undefined;
    if (this.opts.truncateFromMessageId) {
      const at = messages.findIndex((m) => m.id === this.opts.truncateFromMessageId);
      if (at < 0) throw new UsageError(`message "${this.opts.truncateFromMessageId}" is not in conversation "${session.conversationId}" (or a context checkpoint covers it)`);
      await hooks.truncateHistory.promise({ conversationId: session.conversationId, fromMessageId: this.opts.truncateFromMessageId });
      messages = messages.slice(0, at);
      session.truncate(this.opts.truncateFromMessageId);
    }
    return messages;
  }

  private userMessage(input: ContentBlock[]): Message {
    return { id: newMessageId(), role: 'user', content: input, createdAt: Date.now() };
  }

  private offeredTools(): ToolDefinition[] {
    if (this.opts.mode === 'text') return [];
    return this.deps.tools
      .list()
      .map((e) => e.tool)
      .filter((t) => (t.modes ?? ['tools', 'agent-dev']).includes(this.opts.mode));
  }

  private requestContext(round: number): RequestContext {
    const ctx: RequestContext = {
      conversationId: this.conversationId,
      runId: this.runId,
      round,
      mode: this.opts.mode,
      provider: this.opts.provider,
      model: this.opts.model,
      workdir: this.opts.workdir,
      settings: this.deps.settings,
      tools: [],
      signal: this.signal,
    };
    if (this.opts.session.checkpoint) ctx.checkpoint = this.opts.session.checkpoint;
    return ctx;
  }

  /** Ask the compaction hook; a stored checkpoint replaces the window this run sends. */
  private async compact(ctx: RequestContext, ask: Omit<CompactionAsk, 'window'>): Promise<CompactionStep> {
    const step = await askCompaction(
      { hooks: this.deps.hooks, session: this.opts.session, ctx, logger: this.deps.logger, emit: (e) => this.emit(e) },
      { ...ask, window: this.window },
    );
    if (step.kind === 'compacted') {
      this.stamp = undefined;
      this.window = step.window;
      ctx.checkpoint = step.checkpoint;
    }
    return step;
  }

  private async loop(): Promise<RunResult['status']> {
    const maxRounds = this.deps.settings.runtime?.maxRounds ?? 50;
    let trigger: 'pre-send' | 'post-tool' = 'pre-send';
    for (let round = 1; ; round++) {
      if (this.signal.aborted) return 'aborted';
      const ctx = this.requestContext(round);
      let request = await this.buildRequest(ctx);
      const step = await this.compact(ctx, { trigger, force: false, request });
      if (step.kind === 'compacted') request = await this.buildRequest(ctx);
      const budget = step.kind === 'none' ? undefined : step.budget;
      if (budget) this.emit({ type: 'context', payload: contextPayload(budget, round) });
      this.emit({ type: 'turn_start', round });
      const messageId = newMessageId();
      this.emit({ type: 'message_start', messageId, round });
      let streamed = await streamRound(this.roundEnv, request, ctx, messageId, this.midStreamUsed ? undefined : budget?.replyChars);
      if (isOverflow(streamed.failure)) {
        // The provider says the prompt does not fit: compact once and retry once, never more.
        const overflow = streamed.failure!;
        const again = await this.compact(ctx, { trigger: 'overflow', force: true, request, error: { code: 'context_overflow', message: String(overflow.details?.providerMessage ?? overflow.message), retryable: false } });
        if (again.kind === 'compacted') {
          request = await this.buildRequest(ctx);
          streamed = await streamRound(this.roundEnv, request, ctx, messageId, undefined);
        }
        if (isOverflow(streamed.failure)) {
          const why = again.kind === 'compacted' ? 'even after compacting it' : again.kind === 'failed' ? `and compacting it failed (${again.reason})` : 'and nothing could be compacted';
          streamed.failure = { ...streamed.failure!, message: `${streamed.failure!.message}: the conversation does not fit the context window of ${this.opts.model} ${why}` };
          streamed.message.errorMessage = streamed.failure.message;
        }
      }
      const { message, failure, interrupted } = streamed;
      // Cut off by the host stopping, not by the user: clients say "interrupted", not "stopped".
      if (message.stopReason === 'aborted' && this.stopCause === 'shutdown') message.meta = { ...message.meta, partial: true, interrupted: 'shutdown' };
      if (message.usage) this.price(message.usage);
      this.emit({ type: 'message_end', message });
      this.produced.push(message);
      this.usage = addUsage(this.usage, message.usage);

      const calls = failure ? [] : message.content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
      let toolResults: Message | undefined;
      if (calls.length > 0) {
        const tools = new Map(ctx.tools.map((t) => [t.name, t]));
        // Tools that take a while get the call stored first (a crash then leaves a call to repair,
        // not nothing); quick ones leave it to the one round commit below.
        const slow = this.deps.hooks.saveProgress.isUsed() ? this.saveIfSlow(message) : undefined;
        const outcome = await dispatchToolCalls(calls, {
          hooks: this.deps.hooks,
          tools,
          conversationId: this.conversationId,
          runId: this.runId,
          round,
          mode: this.opts.mode,
          workdir: this.opts.workdir,
          signal: this.signal,
          settings: this.deps.settings,
          paths: this.deps.paths,
          logger: this.deps.logger,
          emit: (e) => this.emit(e),
        });
        await slow?.settle();
        toolResults = { id: newMessageId(), role: 'tool', content: outcome.results, createdAt: Date.now() };
        if (outcome.editedFiles.length) {
          message.editedFiles = outcome.editedFiles;
          this.editedFiles = mergeEdited(this.editedFiles, outcome.editedFiles);
        }
        this.produced.push(toolResults);
      }
      await this.deps.hooks.saveRound.promise({
        conversationId: this.conversationId,
        runId: this.runId,
        round,
        assistant: message,
        ...(toolResults ? { toolResults } : {}),
        ...(message.usage ? { usage: message.usage } : {}),
        provider: this.opts.provider.id,
        model: this.opts.model,
        lastSeq: this.opts.session.lastSeq + 1,
      });
      this.opts.session.remember(message);
      this.window.push(message);
      if (toolResults) {
        this.opts.session.remember(toolResults);
        this.window.push(toolResults);
      }
      this.emit({ type: 'turn_end', round, message, ...(toolResults ? { toolResults } : {}), ...(message.usage ? { usage: message.usage } : {}) });

      if (failure) {
        if (this.signal.aborted) return 'aborted';
        this.lastError = failure;
        this.emit({ type: 'error', error: failure });
        return 'error';
      }
      if (this.signal.aborted) return 'aborted';
      if (interrupted) {
        // The reply outgrew the budget: compact with the partial reply kept, then let it go on.
        this.midStreamUsed = true;
        const step = await this.compact(this.requestContext(round), { trigger: 'mid-stream', force: true, request });
        if (step.kind !== 'compacted') {
          // Going on would only overflow: end here, the partial reply kept, and say why.
          const why = step.kind === 'failed' ? step.reason : 'no compaction plugin answered';
          this.lastError = { code: 'provider', message: `the reply outgrew the context window of ${this.opts.model} and the context could not be compacted (${why}); the reply was stopped and what it wrote is kept` };
          this.emit({ type: 'error', error: this.lastError });
          return 'error';
        }
        await this.addUserMessage({ ...this.userMessage([{ type: 'text', text: CONTINUE_AFTER_COMPACTION }]), meta: { synthetic: 'continue' } });
        trigger = 'pre-send';
      } else if (calls.length === 0) {
        return 'completed';
      } else {
        trigger = 'post-tool';
      }
      if (round >= maxRounds) {
        this.lastError = { code: 'tool', message: `tool loop limit reached: the model was still calling tools after ${maxRounds} rounds` };
        this.emit({ type: 'error', error: this.lastError });
        return 'error';
      }
    }
  }

  /** The round's cost at the model's prices (Usage.costUsd), where they are known. */
  private price(usage: Usage): void {
    const cost = costOf(modelFacts(modelsOf(this.opts.provider, this.deps.settings), this.opts.model).price, usage);
    if (cost !== undefined) usage.costUsd = cost;
  }

  /** Store `message` as progress if the work that follows outlasts persistIntervalMs. */
  private saveIfSlow(message: Message): { settle(): Promise<void> } {
    let saving: Promise<void> | undefined;
    const timer = setTimeout(() => {
      saving = this.deps.hooks.saveProgress.promise({ ...message, meta: { ...message.meta, partial: true } }, this.opts.session.info()).catch((err) => this.deps.logger.error('saving progress failed', err));
    }, this.deps.settings.runtime?.persistIntervalMs ?? 250);
    return {
      async settle() {
        clearTimeout(timer);
        await saving;
      },
    };
  }

  private async buildRequest(ctx: RequestContext): Promise<ProviderRequest> {
    const hooks = this.deps.hooks;
    ctx.tools = this.opts.mode === 'text' ? [] : await hooks.tools.promise(this.offeredTools(), ctx);
    // The kernel's own parts (base, user settings, checkpoint, tool rules) are taps at their stages.
    const system = await hooks.systemPrompt.promise([], ctx);
    const messages = await hooks.messages.promise(this.window.slice(), ctx);
    const request: ProviderRequest = {
      model: this.opts.model,
      system,
      messages,
      tools: ctx.tools.map((t) => this.deps.tools.get(t.name)?.spec ?? { name: t.name, description: t.description, inputSchema: t.jsonSchema ?? { type: 'object' } }),
      options: requestOptions(this.deps.settings.providers?.[this.opts.provider.id]),
      conversationId: this.conversationId,
    };
    return hooks.providerRequest.promise(request, ctx);
  }
}

function isOverflow(failure: RuntimeErrorInfo | undefined): boolean {
  return failure?.details?.code === 'context_overflow' && failure.details.partial !== true;
}

function mergeEdited(prev: EditedFile[], next: EditedFile[]): EditedFile[] {
  const map = new Map(prev.map((e) => [e.path, e]));
  for (const e of next) {
    map.delete(e.path);
    map.set(e.path, e);
  }
  return [...map.values()];
}


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
  HistorySnapshot,
  LifecycleEvent,
  Logger,
  Message,
  MessageDelta,
  Provider,
  ProviderErrorInfo,
  ProviderEvent,
  ProviderRequest,
  RequestContext,
  RunHandle,
  RunInfo,
  RunResult,
  RuntimeErrorInfo,
  RuntimePaths,
  Settings,
  SystemPart,
  ToolCallBlock,
  ToolDefinition,
  Usage,
} from '../plugin-api.js';
import { CancelledError, ProviderError, UsageError, toErrorInfo } from './errors.js';
import { EventLog } from './event-queue.js';
import { repairHistory } from './history-repair.js';
import type { SessionHooks } from './hooks.js';
import { newMessageId, newRunId } from './ids.js';
import { MessageAssembler, addUsage } from './message-assembler.js';
import type { ToolRegistry } from './registries.js';
import type { Session } from './sessions.js';
import { dispatchToolCalls } from './tool-dispatch.js';
import { type EventInput, sleep } from './types.js';

export const DEFAULT_SYSTEM_PROMPT =
  'You are LiveAgent, a capable assistant. Be accurate and concise. When tools are available, use them to act rather than describing what you would do.';

export interface RunDeps {
  hooks: SessionHooks;
  tools: ToolRegistry;
  settings: Settings;
  paths: RuntimePaths;
  logger: Logger;
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

  constructor(private readonly deps: RunDeps, private readonly opts: ResolvedRun) {
    this.conversationId = opts.session.conversationId;
    this.log = new EventLog<LifecycleEvent>(opts.keepEvents !== false);
    this.events = this.log;
    if (opts.signal) {
      if (opts.signal.aborted) this.controller.abort();
      else opts.signal.addEventListener('abort', () => this.abort('signal'), { once: true });
    }
    this.result = this.execute();
  }

  /** What this run is running with (SessionInfo.run while it is active). */
  get info(): RunInfo {
    return { runId: this.runId, mode: this.opts.mode, provider: this.opts.provider.id, model: this.opts.model, workdir: this.opts.workdir };
  }

  abort(reason = 'stopped'): void {
    if (!this.controller.signal.aborted) this.controller.abort(new CancelledError(`The run was stopped (${reason})`));
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
      const history = await this.loadHistory();
      started = true;
      const userMessage = this.opts.input ? this.userMessage(this.opts.input) : undefined;
      this.emit({ type: 'agent_start', mode: this.opts.mode, provider: this.opts.provider.id, model: this.opts.model, ...(userMessage ? { userMessage } : {}) });
      if (userMessage) {
        await this.deps.hooks.saveUserMessage.promise(userMessage, session.info());
        session.remember(userMessage);
        history.push(userMessage);
      }
      status = await this.loop(history);
    } catch (err) {
      status = this.signal.aborted && !(err instanceof UsageError) ? 'aborted' : 'error';
      error = toErrorInfo(err);
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
    try {
      if (started) await this.deps.hooks.turnEnd.promise(result, session.info());
    } finally {
      session.finish(this);
    }
    return result;
  }

  private lastError: RuntimeErrorInfo | undefined;

  private async loadHistory(): Promise<Message[]> {
    const { session, isNew } = this.opts;
    const hooks = this.deps.hooks;
    let snapshot: HistorySnapshot | undefined;
    if (hooks.loadHistory.isUsed()) {
      snapshot = await hooks.loadHistory.promise(session.info());
      if (!snapshot && !isNew) throw new UsageError(`unknown conversation "${session.conversationId}"`);
    } else if (!isNew && !session.known) {
      throw new UsageError(`unknown conversation "${session.conversationId}"`);
    }
    if (snapshot) session.lastSeq = Math.max(session.lastSeq, snapshot.lastSeq);
    session.summary = snapshot?.summary;
    let messages = repairHistory(snapshot ? snapshot.messages : session.memory);
    if (this.opts.truncateFromMessageId) {
      const at = messages.findIndex((m) => m.id === this.opts.truncateFromMessageId);
      if (at < 0) throw new UsageError(`message "${this.opts.truncateFromMessageId}" is not in conversation "${session.conversationId}"`);
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

  private async loop(history: Message[]): Promise<RunResult['status']> {
    const maxRounds = this.deps.settings.runtime?.maxRounds ?? 50;
    for (let round = 1; ; round++) {
      if (this.signal.aborted) return 'aborted';
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
      const request = await this.buildRequest(history, ctx);
      this.emit({ type: 'turn_start', round });
      const messageId = newMessageId();
      this.emit({ type: 'message_start', messageId, round });
      const { message, failure } = await this.streamRound(request, ctx, messageId);
      this.emit({ type: 'message_end', message });
      this.produced.push(message);
      this.usage = addUsage(this.usage, message.usage);

      const calls = failure ? [] : message.content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
      let toolResults: Message | undefined;
      if (calls.length > 0) {
        const tools = new Map(ctx.tools.map((t) => [t.name, t]));
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
      history.push(message);
      if (toolResults) {
        this.opts.session.remember(toolResults);
        history.push(toolResults);
      }
      this.emit({ type: 'turn_end', round, message, ...(toolResults ? { toolResults } : {}), ...(message.usage ? { usage: message.usage } : {}) });

      if (failure) {
        if (this.signal.aborted) return 'aborted';
        this.lastError = failure;
        this.emit({ type: 'error', error: failure });
        return 'error';
      }
      if (this.signal.aborted) return 'aborted';
      if (calls.length === 0) return 'completed';
      if (round >= maxRounds) {
        this.lastError = { code: 'tool', message: `tool loop limit reached: the model was still calling tools after ${maxRounds} rounds` };
        this.emit({ type: 'error', error: this.lastError });
        return 'error';
      }
    }
  }

  private async buildRequest(history: Message[], ctx: RequestContext): Promise<ProviderRequest> {
    const hooks = this.deps.hooks;
    ctx.tools = this.opts.mode === 'text' ? [] : await hooks.tools.promise(this.offeredTools(), ctx);
    const base: SystemPart[] = [{ id: 'base', text: DEFAULT_SYSTEM_PROMPT }];
    if (this.deps.settings.systemPrompt?.trim()) base.push({ id: 'user-settings', text: this.deps.settings.systemPrompt.trim() });
    if (this.opts.session.summary) base.push({ id: 'compaction-summary', text: `Summary of the earlier conversation:\n${this.opts.session.summary}` });
    let system = await hooks.systemPrompt.promise(base, ctx);
    // Tool rules are derived per request from the tools offered now, and never stored.
    const rules = [...new Set(ctx.tools.flatMap((t) => t.promptRules ?? []))];
    if (rules.length) system = [...system, { id: 'tool-rules', text: `Tool rules:\n${rules.map((r) => `- ${r}`).join('\n')}` }];
    let messages = await hooks.messages.promise(history.slice(), ctx);
    if (hooks.compaction.isUsed()) {
      const decision = await hooks.compaction.promise(messages, ctx);
      if (decision?.compact) {
        this.emit({ type: 'compaction', payload: { reason: decision.reason, round: ctx.round } });
        // The compaction plugin's messages tap now drops what the checkpoint covers: build again.
        messages = await hooks.messages.promise(history.slice(), ctx);
      }
    }
    // Request options carry the provider's settings, but never its credentials: providerRequest
    // taps (and anything they log) must not see keys. Providers read keys from settings.
    const { apiKey: _key, apiKeyEnv: _keyEnv, ...providerSettings } = this.deps.settings.providers?.[this.opts.provider.id] ?? {};
    const request: ProviderRequest = {
      model: this.opts.model,
      system,
      messages,
      tools: ctx.tools.map((t) => this.deps.tools.get(t.name)?.spec ?? { name: t.name, description: t.description, inputSchema: t.jsonSchema ?? { type: 'object' } }),
      options: { ...(providerSettings as Record<string, never>) },
      conversationId: this.conversationId,
    };
    return hooks.providerRequest.promise(request, ctx);
  }

  /** Stream one model round, with retries before any output and an idle watchdog. */
  private async streamRound(request: ProviderRequest, ctx: RequestContext, messageId: string): Promise<{ message: Message; failure?: RuntimeErrorInfo }> {
    const rt = this.deps.settings.runtime;
    const maxAttempts = rt?.retryMaxAttempts ?? 4;
    const baseDelay = rt?.retryBaseDelayMs ?? 1000;
    const maxDelay = rt?.retryMaxDelayMs ?? 30_000;
    const idleMs = rt?.streamIdleTimeoutMs ?? 120_000;
    const persistEvery = this.deps.settings.runtime?.persistIntervalMs ?? 250;
    const provider = this.opts.provider;
    for (let attempt = 1; ; attempt++) {
      const asm = new MessageAssembler(messageId, provider.id, this.opts.model);
      const outcome = await this.consume(provider, request, ctx, asm, idleMs, persistEvery);
      const message = asm.snapshot(!!outcome.error || this.signal.aborted);
      if (this.signal.aborted) {
        message.stopReason = 'aborted';
        return { message };
      }
      if (!outcome.error) return { message };
      const err = outcome.error;
      const canRetry = err.retryable && !asm.hasOutput && attempt < maxAttempts;
      if (canRetry) {
        const backoff = Math.min(maxDelay, baseDelay * 2 ** (attempt - 1));
        const delay = err.retryAfterMs !== undefined ? Math.min(maxDelay, err.retryAfterMs) : backoff / 2 + Math.random() * (backoff / 2);
        this.emit({ type: 'notice', payload: { kind: 'retry', attempt, delayMs: Math.round(delay), message: err.message, ...(err.status ? { status: err.status } : {}) } });
        await sleep(delay, this.signal);
        if (this.signal.aborted) {
          message.stopReason = 'aborted';
          return { message };
        }
        continue;
      }
      message.stopReason = 'error';
      message.errorMessage = err.message;
      const failure = new ProviderError(`${provider.displayName}: ${err.message}`, {
        plugin: undefined,
        details: { provider: provider.id, code: err.code, ...(err.status ? { status: err.status } : {}), partial: asm.hasOutput },
      }).toInfo();
      return { message, failure };
    }
  }

  private async consume(provider: Provider, request: ProviderRequest, ctx: RequestContext, asm: MessageAssembler, idleMs: number, persistEvery: number): Promise<{ error?: ProviderErrorInfo }> {
    const hooks = this.deps.hooks;
    const watchdog = new AbortController();
    const signal = AbortSignal.any([this.signal, watchdog.signal]);
    let lastEventAt = Date.now();
    let timedOut = false;
    const timer = setInterval(() => {
      if (Date.now() - lastEventAt > idleMs) {
        timedOut = true;
        watchdog.abort();
      }
    }, Math.max(10, Math.min(1000, idleMs / 4)));
    let lastSave = Date.now();
    let saving: Promise<unknown> = Promise.resolve();
    const session = this.opts.session;
    const save = () => {
      lastSave = Date.now();
      const snap = asm.snapshot(true);
      saving = saving.then(() => hooks.saveProgress.promise(snap, session.info())).catch((err) => this.deps.logger.error('saving progress failed', err));
    };
    const persist = hooks.saveProgress.isUsed();
    const notifyProvider = hooks.providerEvent.isUsed();
    let error: ProviderErrorInfo | undefined;
    let finished = false;
    // A provider that ignores the abort signal must not hang the run: race the whole stream once.
    const stopped = new Promise<'stopped'>((resolve) => signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
    const run = async () => {
      try {
        for await (const ev of provider.stream(request, signal) as AsyncIterable<ProviderEvent>) {
          lastEventAt = Date.now();
          if (signal.aborted || finished) break;
          asm.apply(ev);
          if (notifyProvider) hooks.providerEvent.call(ev, ctx);
          this.forward(ev, asm);
          if (ev.type === 'error') {
            error = ev.error;
            break;
          }
          if (persist && (ev.type === 'block_end' || lastEventAt - lastSave >= persistEvery)) save();
        }
      } catch (err) {
        // Contract breach (providers must not throw), still handled as a stream error.
        error = { code: 'stream', message: err instanceof Error ? err.message : String(err), retryable: false };
      }
    };
    try {
      await Promise.race([run(), stopped]);
    } finally {
      finished = true;
      clearInterval(timer);
    }
    if (timedOut && !this.signal.aborted) error = { code: 'timeout', message: `the stream was silent for more than ${idleMs} ms`, retryable: !asm.hasOutput };
    await saving;
    return error ? { error } : {};
  }

  /** Project provider events onto `message_update` deltas. */
  private forward(ev: ProviderEvent, asm: MessageAssembler): void {
    const messageId = asm.messageId;
    switch (ev.type) {
      case 'text_delta':
        this.emitDelta(messageId, { kind: 'text', index: ev.index, text: ev.text });
        break;
      case 'thinking_delta':
        this.emitDelta(messageId, { kind: 'thinking', index: ev.index, text: ev.text });
        break;
      case 'block_start':
        if (ev.block.type === 'tool_call' && !this.hidden(ev.block.name))
          this.emitDelta(messageId, { kind: 'tool_call_start', index: ev.index, id: ev.block.id, name: ev.block.name });
        break;
      case 'tool_input_delta': {
        const name = asm.toolNameAt(ev.index);
        if (!name || !this.hidden(name)) this.emitDelta(messageId, { kind: 'tool_input', index: ev.index, json: ev.json });
        break;
      }
      case 'block_end':
        if (ev.block.type !== 'tool_call' || !this.hidden(ev.block.name)) this.emitDelta(messageId, { kind: 'block', index: ev.index, block: ev.block });
        break;
    }
  }

  private hidden(toolName: string): boolean {
    return !!this.deps.tools.get(toolName)?.tool.hideArgumentDeltas;
  }
}

function mergeEdited(prev: EditedFile[], next: EditedFile[]): EditedFile[] {
  const map = new Map(prev.map((e) => [e.path, e]));
  for (const e of next) {
    map.delete(e.path);
    map.set(e.path, e);
  }
  return [...map.values()];
}


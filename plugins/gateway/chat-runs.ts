/**
 * `chat_queue` items: start, stop and steer runs. Runs belong to the runtime, not to a socket:
 * a client that disconnects leaves its run going. A message sent while a run is active waits in
 * that conversation's visible queue (remove, reorder, edit, send now); when the run ends the next
 * item starts. A clientRequestId seen before is answered with the earlier outcome, so a send
 * repeated after a reconnect never runs twice.
 */
import type { CompactionOutcome, Logger, RunHandle, RunOptions, RuntimeApi, RuntimeErrorInfo, LifecycleEvent } from '../../plugin-api.js';
import type { ContentBlock } from '../../plugin-api.js';
import { AttachmentError, stageAttachments, toInputBlocks, type UploadsLike } from './attachments.js';
import { lastUserMessage, removedCount } from './resend.js';
import type { GatewayClient } from './client.js';
import type { GatewayHistory } from './history.js';
import type { ChatQueueItem, ChatQueueReplies, QueuedItem, ReplyMap, RunStartedReply, ServerMessage } from '../../lib/gateway-protocol/protocol.js';

/** An error answered to the client as `{ code, message }`. */
export class ReplyError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/**
 * A reply that comes later: the request was accepted in order, but its slow part (a compaction's
 * summary request) must not hold up the client's later messages.
 */
export class LaterReply<T = unknown> {
  constructor(readonly result: Promise<T>) {}
}

/** What {@link ChatRuns.handle} answers: a reply ReplyMap declares, now or (compact_now) later. */
export type ChatQueueAnswer = ReplyMap['chat_queue'] | LaterReply<ChatQueueReplies['compact_now']>;

export interface ChatDeps {
  runtime: RuntimeApi;
  history: GatewayHistory;
  logger: Logger;
  /** Subscribe a client to a conversation's live events from now on. */
  follow(client: GatewayClient, conversationId: string): void;
  /** Send to every subscriber of a conversation. */
  notify(conversationId: string, message: ServerMessage): void;
  /** Whether the gateway saw events of this conversation in this process. */
  seen(conversationId: string): boolean;
  service<T>(key: string): T | undefined;
  /**
   * The absolute folder a run works in: the one asked for, checked (a ReplyError says what is
   * wrong), or the gateway's default workspace. Absent: the kernel's default (its current folder).
   */
  workdir?(requested: string | undefined): string;
}

interface RequestRecord {
  conversationId: string;
  runId?: string;
  itemId?: string;
  error?: RuntimeErrorInfo;
}

interface AskUserQuestionService {
  answer(a: { toolCallId: string; conversationId: string; requestJson: string }): unknown;
}

interface PermissionsService {
  decide(d: { toolCallId: string; conversationId: string; decision: 'approve' | 'deny' | 'approve_session' }): { outcome: 'approved' | 'denied' };
}

type SendItem = Extract<ChatQueueItem, { action: 'send' }>;
type EditItem = Extract<ChatQueueItem, { action: 'edit_resend' }>;
type RegenerateItem = Extract<ChatQueueItem, { action: 'regenerate' }>;

const MAX_REQUESTS = 2000;
const MAX_QUEUE = 100;

let itemCounter = 0;

export class ChatRuns {
  private queues = new Map<string, QueuedItem[]>();
  private requests = new Map<string, RequestRecord>();
  private started = new Set<string>();
  private startWaiters = new Map<string, () => void>();
  private pumping = new WeakSet<RunHandle>();
  /** Manual compactions in progress, by conversation (a `stop` aborts one). */
  private compactions = new Map<string, AbortController>();

  constructor(private readonly d: ChatDeps) {}

  /** Called for every lifecycle event (before fan-out): notes which runs have started. */
  observe(e: LifecycleEvent): void {
    if (e.type !== 'agent_start') return;
    this.started.add(e.runId);
    if (this.started.size > MAX_REQUESTS) this.started.delete(this.started.values().next().value!);
    const w = this.startWaiters.get(e.runId);
    if (w) {
      this.startWaiters.delete(e.runId);
      w();
    }
  }

  queueOf(conversationId: string): QueuedItem[] {
    return this.queues.get(conversationId) ?? [];
  }

  /** Queue state as clients see it: attachment bytes are not echoed back. */
  queueView(conversationId: string): QueuedItem[] {
    return this.queueOf(conversationId).map((i) => (i.attachments ? { ...i, attachments: i.attachments.map((a) => ('uploadId' in a ? a : { ...a, data: '' })) } : { ...i }));
  }

  async handle(client: GatewayClient, item: ChatQueueItem): Promise<ChatQueueAnswer> {
    switch (item.action) {
      case 'send':
        return this.send(client, item);
      case 'edit_resend':
        return this.editResend(client, item);
      case 'regenerate':
        return this.regenerate(client, item);
      case 'stop': {
        const run = this.d.runtime.activeRun(item.conversationId);
        run?.abort('stopped by the user');
        const compaction = run ? undefined : this.compactions.get(item.conversationId);
        compaction?.abort(new Error('stopped by the user'));
        return { conversationId: item.conversationId, stopped: !!run || !!compaction } satisfies ChatQueueReplies['stop'];
      }
      case 'compact_now':
        return this.compactNow(client, item.conversationId);
      case 'tool_answer':
        return this.toolAnswer(item);
      case 'tool_approval':
        return this.toolApproval(item);
      case 'queue_remove': {
        const q = this.queueOf(item.conversationId);
        const at = this.indexOf(q, item.conversationId, item.itemId);
        q.splice(at, 1);
        this.changed(item.conversationId);
        return { conversationId: item.conversationId } satisfies ChatQueueReplies['queue_remove'];
      }
      case 'queue_reorder': {
        const q = this.queueOf(item.conversationId);
        const picked = item.itemIds.map((id) => q[this.indexOf(q, item.conversationId, id)]!);
        if (new Set(picked).size !== picked.length) throw new ReplyError('bad_request', 'itemIds: an item is listed twice');
        const rest = q.filter((i) => !picked.includes(i));
        q.splice(0, q.length, ...picked, ...rest);
        this.changed(item.conversationId);
        return { conversationId: item.conversationId } satisfies ChatQueueReplies['queue_reorder'];
      }
      case 'queue_edit': {
        const q = this.queueOf(item.conversationId);
        const entry = q[this.indexOf(q, item.conversationId, item.itemId)]!;
        this.inputOf(item.text, entry.attachments, entry.mode); // still a valid message?
        entry.text = item.text;
        this.changed(item.conversationId);
        return { conversationId: item.conversationId } satisfies ChatQueueReplies['queue_edit'];
      }
      case 'queue_send_now': {
        const q = this.queueOf(item.conversationId);
        const [entry] = q.splice(this.indexOf(q, item.conversationId, item.itemId), 1);
        q.unshift(entry!);
        this.changed(item.conversationId);
        const run = this.d.runtime.activeRun(item.conversationId);
        // The run ends (aborted, with its own done), then pump() starts this item first.
        if (run) run.abort('interrupted by a queued message');
        else this.pump(item.conversationId);
        return { conversationId: item.conversationId, interrupted: !!run } satisfies ChatQueueReplies['queue_send_now'];
      }
    }
  }

  private indexOf(q: QueuedItem[], conversationId: string, itemId: string): number {
    const at = q.findIndex((i) => i.itemId === itemId);
    if (at < 0) throw new ReplyError('not_found', `item "${itemId}" is not queued in conversation "${conversationId}"`);
    return at;
  }

  private uploads(): UploadsLike | undefined {
    return this.d.service<UploadsLike>('uploads');
  }

  private inputOf(text: string, attachments: QueuedItem['attachments'], mode?: QueuedItem['mode']) {
    try {
      return toInputBlocks(text, attachments, { uploads: this.uploads(), mode });
    } catch (err) {
      if (err instanceof AttachmentError) throw new ReplyError(err.code, err.message);
      throw err;
    }
  }

  /** Inline attachments staged into the upload store (when there is one): queues and history hold references. */
  private async staged(attachments: QueuedItem['attachments']): Promise<QueuedItem['attachments']> {
    try {
      return await stageAttachments(attachments, this.uploads());
    } catch (err) {
      if (err instanceof AttachmentError) throw new ReplyError(err.code, err.message);
      throw err;
    }
  }

  private duplicate(client: GatewayClient, clientRequestId: string): RunStartedReply | undefined {
    const rec = this.requests.get(clientRequestId);
    if (!rec) return undefined;
    this.d.follow(client, rec.conversationId);
    if (rec.error) throw new ReplyError(rec.error.code, rec.error.message);
    return { conversationId: rec.conversationId, ...(rec.runId ? { runId: rec.runId } : {}), ...(rec.itemId && !rec.runId ? { queued: true, itemId: rec.itemId } : {}), duplicate: true };
  }

  private remember(clientRequestId: string, rec: RequestRecord): void {
    this.requests.delete(clientRequestId);
    this.requests.set(clientRequestId, rec);
    if (this.requests.size > MAX_REQUESTS) this.requests.delete(this.requests.keys().next().value!);
  }

  private checkProvider(provider: string | undefined): void {
    if (provider && !this.d.runtime.provider(provider)) {
      const known = this.d.runtime.providers().map((p) => p.id).join(', ') || 'none loaded';
      throw new ReplyError('usage', `unknown provider "${provider}" (known: ${known})`);
    }
  }

  private async known(conversationId: string): Promise<boolean> {
    return !!this.d.runtime.activeRun(conversationId) || this.d.seen(conversationId) || (await this.d.history.exists(conversationId));
  }

  private async send(client: GatewayClient, item: SendItem): Promise<ChatQueueReplies['send']> {
    const dup = this.duplicate(client, item.clientRequestId);
    if (dup) return dup;
    const attachments = await this.staged(item.attachments);
    const input = this.inputOf(item.text, attachments, item.mode);
    this.checkProvider(item.provider);
    const conversationId = item.conversationId;
    // A folder that is not one is refused now, not when the queued message's turn comes.
    if (item.workdir && this.d.workdir) this.d.workdir(item.workdir);
    if (conversationId) {
      if (!(await this.known(conversationId))) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
      const again = this.duplicate(client, item.clientRequestId); // a twin may have landed during the await
      if (again) return again;
      // A manual compaction holds the conversation like a run: the message waits in the queue.
      if (this.d.runtime.activeRun(conversationId) || this.queueOf(conversationId).length > 0 || this.compactions.has(conversationId)) {
        const q = this.queues.get(conversationId) ?? [];
        if (q.length >= MAX_QUEUE) throw new ReplyError('conflict', `the queue of conversation "${conversationId}" is full (${MAX_QUEUE} messages)`);
        const queued: QueuedItem = {
          itemId: `q_${Date.now().toString(36)}_${++itemCounter}`,
          text: item.text,
          ...(attachments ? { attachments } : {}),
          ...(item.mode ? { mode: item.mode } : {}),
          ...(item.provider ? { provider: item.provider } : {}),
          ...(item.model ? { model: item.model } : {}),
          ...(item.workdir ? { workdir: item.workdir } : {}),
          clientRequestId: item.clientRequestId,
          createdAt: Date.now(),
        };
        q.push(queued);
        this.queues.set(conversationId, q);
        this.remember(item.clientRequestId, { conversationId, itemId: queued.itemId });
        this.d.follow(client, conversationId);
        this.changed(conversationId);
        this.pump(conversationId);
        return { conversationId, queued: true, itemId: queued.itemId };
      }
    }
    this.lastStarted = undefined;
    const started = this.start(client, { ...runFields(item), input, ...(conversationId ? { conversationId } : {}), clientRequestId: item.clientRequestId });
    // A new chat's instructions, set before its first message: handed over before the run's
    // first request is built (the run starts on the next microtask; its id is known already).
    if (!conversationId && item.instructions?.trim()) {
      const id = this.lastStarted;
      if (id) this.d.service<{ preset(conversationId: string, patch: { instructions: string }): void }>('conversationSettings')?.preset(id, { instructions: item.instructions });
    }
    return started;
  }

  /** The conversation of the run `start` began last (set synchronously, before its first await). */
  private lastStarted: string | undefined;

  private async editResend(client: GatewayClient, item: EditItem): Promise<ChatQueueReplies['edit_resend']> {
    const dup = this.duplicate(client, item.clientRequestId);
    if (dup) return dup;
    const input = this.inputOf(item.text, await this.staged(item.attachments), item.mode);
    this.checkProvider(item.provider);
    if (this.d.runtime.activeRun(item.conversationId) || this.queueOf(item.conversationId).length > 0) {
      throw new ReplyError('conflict', `conversation "${item.conversationId}" has a run in progress: stop it before editing a message`);
    }
    if (this.compactions.has(item.conversationId)) throw new ReplyError('conflict', `conversation "${item.conversationId}" is being compacted: edit the message once it is done`);
    if (!(await this.known(item.conversationId))) throw new ReplyError('not_found', `unknown conversation "${item.conversationId}"`);
    // How many stored messages the truncation removes, for the client's record (unknown when not stored: the run then refuses).
    const removed = await removedCount(this.d.history, item.conversationId, item.messageId).catch(() => undefined);
    const started = (await this.start(client, { ...runFields(item), input, conversationId: item.conversationId, truncateFromMessageId: item.messageId, clientRequestId: item.clientRequestId }));
    return { ...started, ...(removed !== undefined ? { removedCount: removed } : {}) };
  }

  /** Resend the last user message as stored (text and attachment blocks), truncating from it. */
  private async regenerate(client: GatewayClient, item: RegenerateItem): Promise<ChatQueueReplies['regenerate']> {
    const dup = this.duplicate(client, item.clientRequestId);
    if (dup) return dup;
    this.checkProvider(item.provider);
    if (this.d.runtime.activeRun(item.conversationId) || this.queueOf(item.conversationId).length > 0 || this.compactions.has(item.conversationId)) {
      throw new ReplyError('conflict', `conversation "${item.conversationId}" has a run in progress: stop it before regenerating`);
    }
    if (!(await this.known(item.conversationId))) throw new ReplyError('not_found', `unknown conversation "${item.conversationId}"`);
    const last = await lastUserMessage(this.d.history, item.conversationId);
    const input: ContentBlock[] = last.message.content;
    const attached = input.filter((b) => b.type === 'attachment');
    if (attached.length) {
      try {
        this.uploads()?.checkMessage(attached, item.mode);
      } catch (err) {
        throw new ReplyError(String((err as { code?: unknown }).code ?? 'bad_request'), (err as Error).message);
      }
    }
    const started = (await this.start(client, { ...runFields(item), input, conversationId: item.conversationId, truncateFromMessageId: last.message.id, clientRequestId: item.clientRequestId }));
    return { ...started, messageId: last.message.id, removedCount: last.removedCount };
  }

  private async start(client: GatewayClient | undefined, options: RunOptions & { clientRequestId: string }): Promise<RunStartedReply> {
    // Before any await: pump() relies on the run being started when this returns its promise.
    if (this.d.workdir) options = { ...options, workdir: this.d.workdir(options.workdir) };
    let handle: RunHandle;
    try {
      // The gateway reads every event through runtime.onEvent; the run need not keep its own log.
      handle = this.d.runtime.startRun({ ...options, keepEvents: false });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new ReplyError(typeof code === 'string' ? code : 'internal', (err as Error).message);
    }
    this.lastStarted = handle.conversationId;
    const rec: RequestRecord = { conversationId: handle.conversationId, runId: handle.runId };
    this.remember(options.clientRequestId, rec);
    if (options.truncateFromMessageId) this.d.history.noteTruncation(handle.runId, options.truncateFromMessageId);
    if (client) this.d.follow(client, handle.conversationId);
    const failure = await this.startedOrFailed(handle);
    if (failure) {
      this.d.history.forgetTruncation(handle.runId);
      rec.error = failure;
      throw new ReplyError(failure.code, failure.message);
    }
    return { conversationId: handle.conversationId, runId: handle.runId };
  }

  /**
   * Wait until the run emitted agent_start, or ended without starting (unknown conversation or
   * message, a storage failure): such a run emits no events, so the error must go in the reply.
   */
  private startedOrFailed(handle: RunHandle): Promise<RuntimeErrorInfo | undefined> {
    if (this.started.has(handle.runId)) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.startWaiters.set(handle.runId, () => resolve(undefined));
      void handle.result.then((r) => {
        if (!this.startWaiters.delete(handle.runId)) return;
        resolve(this.started.has(handle.runId) || r.status !== 'error' ? undefined : (r.error ?? { code: 'internal', message: 'the run failed to start' }));
      });
    });
  }

  /** Start the next queued item once the conversation is idle. */
  pump(conversationId: string): void {
    const active = this.d.runtime.activeRun(conversationId);
    if (active) {
      if (!this.pumping.has(active)) {
        this.pumping.add(active);
        void active.result.then(() => setImmediate(() => this.pump(conversationId)));
      }
      return;
    }
    if (this.compactions.has(conversationId)) return; // its end pumps again
    const q = this.queues.get(conversationId);
    const item = q?.shift();
    if (!item) return;
    if (q!.length === 0) this.queues.delete(conversationId);
    this.changed(conversationId);
    const fail = (error: { code: string; message: string }) => {
      // Nobody is waiting on a request for a queued item: tell the conversation's clients.
      this.d.notify(conversationId, { type: 'reply', id: `queue:${item.itemId}`, ok: false, error: { code: error.code, message: error.message } });
      this.pump(conversationId);
    };
    let input;
    try {
      input = toInputBlocks(item.text, item.attachments, { uploads: this.uploads(), mode: item.mode });
    } catch (err) {
      return fail({ code: 'bad_request', message: (err as Error).message });
    }
    this.start(undefined, { ...runFields(item), input, conversationId, clientRequestId: item.clientRequestId }).then(
      (r) => {
        const rec = this.requests.get(item.clientRequestId);
        if (rec && r.runId) rec.runId = r.runId;
        this.pump(conversationId);
      },
      (err: ReplyError) => fail({ code: err.code ?? 'internal', message: err.message }),
    );
    // Attach the waiter to the run just started, so the next item follows it.
    this.pump(conversationId);
  }

  /** Forget a deleted conversation's queue (and stop its compaction). */
  forget(conversationId: string): void {
    this.compactions.get(conversationId)?.abort(new Error('conversation deleted'));
    if (this.queues.delete(conversationId)) this.changed(conversationId);
  }

  /**
   * Compact now (runtime.compact, trigger `manual`). Checked in order with the client's other
   * messages; the outcome is the reply, sent when the compaction ends. Its `compaction` events
   * reach the subscribers like a run's.
   */
  private async compactNow(client: GatewayClient, conversationId: string): Promise<LaterReply<ChatQueueReplies['compact_now']>> {
    const busy = () => new ReplyError('conflict', `conversation "${conversationId}" has a run in progress: compact it after the run (a run compacts itself when it needs to)`);
    if (this.d.runtime.activeRun(conversationId) || this.queueOf(conversationId).length > 0) throw busy();
    if (this.compactions.has(conversationId)) throw new ReplyError('conflict', `conversation "${conversationId}" is already being compacted`);
    if (!(await this.known(conversationId))) throw new ReplyError('not_found', `unknown conversation "${conversationId}"`);
    if (this.d.runtime.activeRun(conversationId)) throw busy(); // a run may have started during the await
    const ctl = new AbortController();
    this.compactions.set(conversationId, ctl);
    this.d.follow(client, conversationId);
    let result: Promise<CompactionOutcome>;
    try {
      result = this.d.runtime.compact(conversationId, { signal: ctl.signal });
    } catch (err) {
      result = Promise.reject(err);
    }
    const done = result.then(
      (outcome) => outcome,
      (err: unknown) => {
        throw compactionError(conversationId, err);
      },
    );
    void done.catch(() => undefined).finally(() => {
      if (this.compactions.get(conversationId) === ctl) this.compactions.delete(conversationId);
      // Messages sent meanwhile were queued behind the compaction: start them now.
      this.pump(conversationId);
    });
    return new LaterReply(done);
  }

  private changed(conversationId: string): void {
    this.d.notify(conversationId, { type: 'queue', conversationId, items: this.queueView(conversationId) });
  }

  private async toolAnswer(item: Extract<ChatQueueItem, { action: 'tool_answer' }>): Promise<ChatQueueReplies['tool_answer']> {
    const svc = this.d.service<AskUserQuestionService>('askUserQuestion');
    if (!svc || typeof svc.answer !== 'function') {
      throw new ReplyError('unavailable', 'AskUserQuestion is not available: no plugin provides the "askUserQuestion" service');
    }
    try {
      await svc.answer({ toolCallId: item.item_id, conversationId: item.conversation_id, requestJson: item.request_json });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new ReplyError(typeof code === 'string' ? code : 'bad_request', (err as Error).message);
    }
    return { toolCallId: item.item_id };
  }

  /** The `permissions` service settles the approval; a wrong conversation, an unknown or settled id is its refusal. */
  private toolApproval(item: Extract<ChatQueueItem, { action: 'tool_approval' }>): ChatQueueReplies['tool_approval'] {
    const svc = this.d.service<PermissionsService>('permissions');
    if (!svc || typeof svc.decide !== 'function') {
      throw new ReplyError('unavailable', 'tool approvals are not available: no plugin provides the "permissions" service');
    }
    try {
      const { outcome } = svc.decide({ toolCallId: item.item_id, conversationId: item.conversation_id, decision: item.decision });
      // Built here, not passed through: the reply is the gateway's (ReplyMap), whatever else the service's receipt holds.
      return { toolCallId: item.item_id, conversationId: item.conversation_id, decision: item.decision, outcome };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new ReplyError(typeof code === 'string' ? code : 'bad_request', (err as Error).message);
    }
  }
}

/** The kernel refuses with a UsageError; say which refusal it was in the gateway's codes. */
function compactionError(conversationId: string, err: unknown): ReplyError {
  const message = err instanceof Error ? err.message : String(err);
  if (/run in progress|already being compacted/.test(message)) return new ReplyError('conflict', message);
  if (/unknown conversation/.test(message)) return new ReplyError('not_found', message);
  const code = (err as { code?: unknown })?.code;
  return new ReplyError(typeof code === 'string' ? code : 'internal', message || `compacting conversation "${conversationId}" failed`);
}

function runFields(item: { mode?: RunOptions['mode']; provider?: string; model?: string; workdir?: string }): Partial<RunOptions> {
  return {
    ...(item.mode ? { mode: item.mode } : {}),
    ...(item.provider ? { provider: item.provider } : {}),
    ...(item.model ? { model: item.model } : {}),
    ...(item.workdir ? { workdir: item.workdir } : {}),
  };
}

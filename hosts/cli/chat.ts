/**
 * `liveagent chat`: one request, headless. Without --json the reply streams to stdout, tool
 * activity and diagnostics go to stderr, and the conversation id ends stderr. With --json,
 * stdout carries only JSON lines, one per lifecycle event (failures before the run too).
 *
 * A reader that goes away (`| head -1`, a closed terminal) ends the output quietly: the run
 * still completes and is stored. SIGINT, SIGTERM and SIGHUP stop the run, stop every process
 * its tools started (kernel shutdown) and exit 128 + the signal's number.
 */
import readline from 'node:readline';
import { PassThrough } from 'node:stream';
import path from 'node:path';
import type { AttachmentBlock, ContentBlock, LifecycleEvent, RunHandle } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { HISTORY_SERVICE, type HistoryService } from '../../plugins/history-sqlite/service.js';
import { UPLOADS_SERVICE, attachmentBlock, type UploadsService } from '../../plugins/uploads/service.js';
import { builtinPlugins } from '../builtins.js';
import { CliUsageError, checkWorkdir, type ChatArgs } from './args.js';
import { EXIT, onStopSignal, reportFailure, signalExitCode, type StopSignal } from './exit-codes.js';

export interface ChatIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream;
}

/**
 * A reader that left must not crash the host: EPIPE (and EIO after a hangup) arrive as 'error'
 * events, which unhandled would end the process before the run is stored. Node drops later
 * writes to the destroyed stream without another error, so the run goes on unaware.
 */
function survivePipeErrors(stream: NodeJS.WritableStream): void {
  // Never removed: an EPIPE may still be emitted while the process exits.
  if (!stream.listeners('error').includes(ignoreError)) stream.on('error', ignoreError);
}
function ignoreError(): void {}

export async function runChat(args: ChatArgs, io: ChatIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  const json = !!args.json;
  survivePipeErrors(io.stdout);
  survivePipeErrors(io.stderr);
  let stoppedBy: StopSignal | undefined;
  let run: RunHandle | undefined;
  // Handled from the start: a signal during boot must not kill the host outright either.
  const signals = onStopSignal((signal) => {
    stoppedBy = signal;
    run?.abort('interrupted');
  });
  let kernel: Kernel | undefined;
  try {
    const workdir = checkWorkdir(args.workdir ?? process.cwd());
    try {
      kernel = await createKernel({ builtins: await builtinPlugins() });
    } catch (err) {
      return reportFailure(err, io, json);
    }
    if (stoppedBy) return signalExitCode(stoppedBy);
    try {
      const message = await messageInput(kernel, args);
      run = kernel.runtime.startRun({
        ...message,
        ...(args.mode ? { mode: args.mode } : {}),
        ...(args.provider ? { provider: args.provider } : {}),
        ...(args.model ? { model: args.model } : {}),
        workdir,
        ...(args.conversation ? { conversationId: args.conversation } : {}),
      });
    } catch (err) {
      return reportFailure(err, io, json);
    }
    return await followRun(run, kernel, args, io, () => stoppedBy);
  } catch (err) {
    return reportFailure(err, io, json);
  } finally {
    await kernel?.shutdown();
    signals.dispose();
  }
}

async function followRun(run: RunHandle, kernel: Kernel, args: ChatArgs, io: ChatIo, stoppedBy: () => StopSignal | undefined): Promise<number> {
  const stdin = new StdinRouter(io, !!args.json);
  const attached = INTERACTION_KEYS.flatMap((key) => {
    const interaction = kernel.services.get<CliInteraction>(key);
    return interaction ? [stdin.attach((input) => interaction.attach({ json: !!args.json, io: { ...io, stdin: input }, conversationId: run.conversationId }))] : [];
  });
  try {
    if (args.json) {
      for await (const e of run.events) io.stdout.write(JSON.stringify(e) + '\n');
    } else {
      await printHuman(run.events, io);
    }
  } finally {
    for (const a of attached) a.dispose();
    stdin.dispose();
  }
  const result = await run.result;
  await kernel.shutdown(); // stops what the tools started before the last lines are written
  const signal = stoppedBy();
  if (result.status === 'completed' && !signal) {
    if (!args.json) io.stderr.write(`conversation: ${result.conversationId}\n`);
    return EXIT.ok;
  }
  if (result.error?.code === 'usage') {
    io.stderr.write(`liveagent: ${result.error.message}\n`);
    return EXIT.usage;
  }
  const reason = signal ? `stopped by ${signal}` : result.status === 'aborted' ? 'the run was stopped' : (result.error?.message ?? 'the run failed');
  io.stderr.write(`liveagent: ${reason.replace(/\s*\n\s*/g, ' ')}\n`);
  if (!args.json) io.stderr.write(`conversation: ${result.conversationId}\n`);
  return signal ? signalExitCode(signal) : EXIT.failure;
}

/**
 * The message to send: the PROMPT and the `--attach` files staged through the upload store
 * (tools modes only), or with `--regenerate` the conversation's last user message as stored,
 * resent after truncating from it. Bad usage is a CliUsageError (exit 2).
 */
async function messageInput(kernel: Kernel, args: ChatArgs): Promise<{ input: ContentBlock[]; truncateFromMessageId?: string }> {
  const mode = args.mode ?? kernel.settings.get().defaultMode ?? 'tools';
  const uploads = kernel.services.get<UploadsService>(UPLOADS_SERVICE);
  const check = (blocks: AttachmentBlock[]) => {
    try {
      uploads?.checkMessage(blocks, mode);
    } catch (err) {
      throw new CliUsageError((err as Error).message);
    }
  };
  if (args.regenerate) {
    const last = await lastUserMessage(kernel, args.conversation!);
    check(last.content.filter((b): b is AttachmentBlock => b.type === 'attachment'));
    return { input: last.content, truncateFromMessageId: last.id };
  }
  const input: ContentBlock[] = args.prompt ? [{ type: 'text', text: args.prompt }] : [];
  if (!args.attach?.length) return { input };
  if (mode === 'text') throw new CliUsageError('--attach works in the tools modes only (tools, agent-dev): a text-mode run has no tools to read the files with');
  if (!uploads) throw new CliUsageError('--attach needs the uploads plugin, which is not loaded');
  const attached: AttachmentBlock[] = [];
  for (const file of args.attach) {
    try {
      attached.push(attachmentBlock((await uploads.stageFile(path.resolve(file))).record));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a folder, not a file' : (err as Error).message;
      throw new CliUsageError(`--attach ${file}: ${why}`);
    }
  }
  check(attached);
  return { input: [...input, ...attached] };
}

/** The newest user message the user wrote in a stored conversation. */
async function lastUserMessage(kernel: Kernel, conversationId: string): Promise<{ id: string; content: ContentBlock[] }> {
  const history = kernel.services.get<HistoryService>(HISTORY_SERVICE);
  if (!history) throw new CliUsageError('--regenerate needs the history store, which is not loaded');
  let before: number | undefined;
  for (;;) {
    const c = await history.getConversation(conversationId, { limit: 200, ...(before ? { before } : {}) });
    if (!c) throw new CliUsageError(`unknown conversation "${conversationId}"`);
    const m = [...c.messages].reverse().find((x) => x.role === 'user' && !x.meta?.synthetic);
    if (m) return { id: m.id, content: m.content };
    if (!c.hasMore || !c.messages.length) throw new CliUsageError(`conversation "${conversationId}" has no user message to regenerate from`);
    before = c.messages[0]!.ordinal;
  }
}

/** A service a plugin (AskUserQuestion, permissions) provides to interact with the terminal during a CLI run. */
export interface CliInteraction {
  attach(session: { json: boolean; io: ChatIo; conversationId: string }): CliAttachment;
}

/** An interaction attached to one run. Its `io.stdin` carries only the lines that are its own. */
export interface CliAttachment {
  dispose(): void;
  /** --json: whether the line for this `item_id` is this interaction's (one of its pending items). */
  owns?(itemId: string): boolean;
  /** Without --json: whether it waits for a typed line now. */
  awaitingInput?(): boolean;
}

/** Services have one owner per key, so each interaction has its own. */
const INTERACTION_KEYS = ['cli.interaction', 'cli.interaction.permissions'];

/**
 * Reads stdin once for every interaction, so two readers never both take (and complain about)
 * the same line: with --json a line goes to the interaction that owns its `item_id`, without it
 * to the one waiting for input; a line nobody owns gets one diagnostic. An interaction without
 * `owns` / `awaitingInput` gets the lines nobody else took. Reading starts when the first
 * interaction reads its own stdin, so a run that asks nothing leaves stdin alone.
 */
class StdinRouter {
  private readonly routes: Array<{ input: PassThrough; attachment?: CliAttachment }> = [];
  private rl: readline.Interface | undefined;

  constructor(private readonly io: ChatIo, private readonly json: boolean) {}

  attach(make: (stdin: NodeJS.ReadableStream | undefined) => CliAttachment): CliAttachment {
    if (!this.io.stdin) return make(undefined);
    const route: { input: PassThrough; attachment?: CliAttachment } = { input: new PassThrough() };
    route.input.once('resume', () => this.start());
    this.routes.push(route);
    route.attachment = make(route.input);
    return route.attachment;
  }

  dispose(): void {
    if (!this.rl) return;
    this.rl.removeAllListeners('close');
    this.rl.close();
    // Without this a piped stdin keeps the process alive after the run has ended.
    this.io.stdin?.pause();
  }

  private start(): void {
    if (this.rl || !this.io.stdin) return;
    this.rl = readline.createInterface({ input: this.io.stdin, crlfDelay: Infinity, terminal: false });
    this.rl.on('line', (line) => this.route(line));
    this.rl.on('close', () => {
      for (const r of this.routes) r.input.end();
    });
  }

  private route(line: string): void {
    if (!line.trim()) return;
    const diag = (msg: string) => this.io.stderr.write(`liveagent: ${msg}\n`);
    const legacy = this.routes.filter((r) => (this.json ? !r.attachment?.owns : !r.attachment?.awaitingInput));
    let target: (typeof this.routes)[number] | undefined;
    if (this.json) {
      let itemId: unknown;
      try {
        itemId = (JSON.parse(line) as { item_id?: unknown } | null)?.item_id;
      } catch {
        if (!legacy.length) return void diag('answer ignored: the line is not JSON (expected {"item_id": "<toolCallId>", ...} for a pending question or approval)');
      }
      target = typeof itemId === 'string' ? this.routes.find((r) => r.attachment?.owns?.(itemId as string)) : undefined;
      if (!target && !legacy.length) {
        return void diag(typeof itemId === 'string' ? `answer ignored: nothing is waiting for item_id "${itemId}" (no pending question or approval has that id; it may be settled already)` : 'answer ignored: item_id must be a string (the toolCallId of a pending question or approval)');
      }
    } else {
      target = this.routes.find((r) => r.attachment?.awaitingInput?.());
      if (!target && !legacy.length) return void diag('input ignored: nothing is waiting for an answer');
    }
    for (const r of target ? [target] : legacy) r.input.write(`${line}\n`);
  }
}

async function printHuman(events: AsyncIterable<LifecycleEvent>, io: ChatIo) {
  let atLineStart = true;
  let inThinking = false;
  const out = (s: string) => {
    if (!s) return;
    io.stdout.write(s);
    atLineStart = s.endsWith('\n');
  };
  for await (const e of events) {
    switch (e.type) {
      case 'message_update':
        if (e.delta.kind === 'text') {
          if (inThinking) {
            io.stderr.write('\n');
            inThinking = false;
          }
          out(e.delta.text);
        } else if (e.delta.kind === 'thinking') {
          if (!inThinking) io.stderr.write('[thinking] ');
          inThinking = true;
          io.stderr.write(e.delta.text);
        }
        break;
      case 'tool_execution_start':
        if (!atLineStart) out('\n');
        io.stderr.write(`[tool] ${e.toolName} ${summarizeArgs(e.args)}\n`);
        break;
      case 'tool_execution_end':
        io.stderr.write(`[tool] ${e.toolName} ${e.result.isError ? 'failed' : 'done'} (${e.durationMs} ms)\n`);
        break;
      case 'compaction': {
        const p = e.payload;
        if (!atLineStart) out('\n');
        if (p.phase === 'start') io.stderr.write(`[compaction] compacting the context (${String(p.trigger)})…\n`);
        else if (p.phase === 'end') io.stderr.write(`[compaction] ${p.kind === 'summary' ? `${String(p.coveredMessageCount)} messages summarized` : 'old tool outputs pruned'}; context ${String(p.tokensBefore)} → ${String(p.tokensAfter)} tokens\n`);
        else io.stderr.write(`[compaction] failed, history unchanged: ${String(p.error)}\n`);
        break;
      }
      case 'notice':
        io.stderr.write(`[notice] ${String(e.payload.message ?? e.payload.kind ?? '')}\n`);
        break;
      case 'agent_end':
        if (!atLineStart) out('\n');
        if (e.editedFiles?.length) io.stderr.write(`edited: ${e.editedFiles.map((f) => `${f.action} ${f.path}`).join(', ')}\n`);
        break;
    }
  }
}

function summarizeArgs(args: Record<string, unknown>): string {
  const s = JSON.stringify(args);
  return s.length > 160 ? `${s.slice(0, 157)}...` : s;
}

/**
 * `liveagent chat`: one request, headless. Without --json the reply streams to stdout, tool
 * activity and diagnostics go to stderr, and the conversation id ends stderr. With --json,
 * stdout carries only JSON lines, one per lifecycle event (failures before the run too).
 *
 * A reader that goes away (`| head -1`, a closed terminal) ends the output quietly: the run
 * still completes and is stored. SIGINT, SIGTERM and SIGHUP stop the run, stop every process
 * its tools started (kernel shutdown) and exit 128 + the signal's number.
 */
import type { LifecycleEvent, RunHandle } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { builtinPlugins } from '../builtins.js';
import { checkWorkdir, type ChatArgs } from './args.js';
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
      run = kernel.runtime.startRun({
        input: [{ type: 'text', text: args.prompt }],
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
  const cliHooks = kernel.services.get<CliInteraction>('cli.interaction');
  const detach = cliHooks?.attach({ json: !!args.json, io, conversationId: run.conversationId });
  try {
    if (args.json) {
      for await (const e of run.events) io.stdout.write(JSON.stringify(e) + '\n');
    } else {
      await printHuman(run.events, io);
    }
  } finally {
    detach?.dispose();
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

/** A service a plugin (AskUserQuestion) provides to interact with the terminal during a CLI run. */
export interface CliInteraction {
  attach(session: { json: boolean; io: ChatIo; conversationId: string }): { dispose(): void };
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

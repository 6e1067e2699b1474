/**
 * `liveagent chat`: one request, headless. Without --json the reply streams to stdout, tool
 * activity and diagnostics go to stderr, and the conversation id ends stderr. With --json,
 * stdout carries only JSON lines, one per lifecycle event.
 */
import type { LifecycleEvent, RunHandle } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { describeError } from '../../core/errors.js';
import { builtinPlugins } from '../builtins.js';
import type { ChatArgs } from './args.js';
import { EXIT, exitCodeFor } from './exit-codes.js';

export interface ChatIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream;
}

export async function runChat(args: ChatArgs, io: ChatIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  let kernel: Kernel;
  try {
    kernel = await createKernel({ builtins: await builtinPlugins() });
  } catch (err) {
    io.stderr.write(`liveagent: ${describeError(err)}\n`);
    return exitCodeFor(err);
  }
  let run: RunHandle;
  try {
    run = kernel.runtime.startRun({
      input: [{ type: 'text', text: args.prompt }],
      ...(args.mode ? { mode: args.mode } : {}),
      ...(args.provider ? { provider: args.provider } : {}),
      ...(args.model ? { model: args.model } : {}),
      workdir: args.workdir ?? process.cwd(),
      ...(args.conversation ? { conversationId: args.conversation } : {}),
    });
  } catch (err) {
    io.stderr.write(`liveagent: ${describeError(err)}\n`);
    await kernel.shutdown();
    return exitCodeFor(err);
  }
  const onSigint = () => run.abort('interrupted');
  process.once('SIGINT', onSigint);
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
    process.removeListener('SIGINT', onSigint);
  }
  const result = await run.result;
  await kernel.shutdown();
  if (result.status === 'completed') {
    if (!args.json) io.stderr.write(`conversation: ${result.conversationId}\n`);
    return EXIT.ok;
  }
  if (result.error?.code === 'usage') {
    io.stderr.write(`liveagent: ${result.error.message}\n`);
    return EXIT.usage;
  }
  const reason = result.status === 'aborted' ? 'the run was stopped' : (result.error?.message ?? 'the run failed');
  io.stderr.write(`liveagent: ${reason.replace(/\s*\n\s*/g, ' ')}\n`);
  if (!args.json) io.stderr.write(`conversation: ${result.conversationId}\n`);
  return EXIT.failure;
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

/**
 * Bash: one command in the workspace, in its own process group and tagged so that what leaves the
 * group is found too. Timeout (default 120 s, at most 600 s) and abort stop the whole tree; so
 * does the command's end, for what it left in the background. Output is capped head-and-tail;
 * the exit code is in the result, and so is any process that could not be stopped. Bash never
 * reports edited files: its side effects are not guessed at.
 */
import { z } from 'zod';
import type { Settings, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { guarded } from '../../lib/tool-shared/results.js';
import type { Survivor } from '../../lib/tool-shared/process-group.js';
import { acquireHostProcesses, releaseHostProcesses, type HostProcesses } from '../../lib/tool-shared/process-records.js';
import { sectionSchema, toolSettings } from '../../lib/tool-shared/settings.js';
import { description } from './description.js';
import { runCommand } from '../../lib/tool-shared/run-command.js';

export const BashArgsSchema = z.object({
  command: z.string().min(1).describe('The command to run with bash -c.'),
  timeout: z.number().int().min(1).optional().describe('Milliseconds before the command is stopped. Default 120000, at most 600000.'),
  description: z.string().optional().describe('What the command does, in 5-10 words.'),
});
export type BashArgs = z.output<typeof BashArgsSchema>;

function survivorList(survivors: Survivor[]): string {
  return survivors.map((p) => `pid ${p.pid}${p.command ? ` (${p.command})` : ''}`).join(', ');
}

async function runBash(args: BashArgs, ctx: ToolContext, records?: HostProcesses): Promise<ToolResult> {
  const s = toolSettings(ctx.settings, 'bash');
  const asked = args.timeout ?? s.defaultTimeoutMs;
  const timeoutMs = Math.min(asked, s.maxTimeoutMs);
  if (ctx.signal.aborted) return { content: [{ type: 'text', text: 'Not run: the run was stopped.' }], isError: true, details: { aborted: true } };
  const r = await runCommand(args.command, {
    cwd: ctx.workdir,
    timeoutMs,
    signal: ctx.signal,
    settings: s,
    ...(records ? { records } : {}),
    onProgress: (recent, outputBytes, elapsedMs) => ctx.update({ content: [{ type: 'text', text: recent }], details: { outputBytes, elapsedMs } }),
  });
  const notes: string[] = [];
  if (r.spawnError) notes.push(`The command could not be started: ${r.spawnError}`);
  if (asked > timeoutMs) notes.push(`[The timeout was capped at ${timeoutMs} ms.]`);
  // Only claim what happened: "every process stopped" needs an empty survivor list.
  const all = r.survivors.length === 0;
  const escaped = r.escaped ? ` (${r.escaped} of them had left its process group)` : '';
  const stoppedText = all ? `the command and every process it started were stopped${escaped}` : 'the command was stopped, but not every process it started';
  if (r.timedOut) notes.push(`[Timed out after ${timeoutMs} ms: ${stoppedText}.]`);
  if (r.aborted) notes.push(`[Stopped because the run was stopped: ${stoppedText}.]`);
  if (r.backgroundStopped) {
    notes.push(
      all
        ? `[Processes the command left running in the background were stopped${escaped}. Use ManagedProcess for long-running commands.]`
        : '[The command left processes running in the background and not all of them could be stopped. Use ManagedProcess for long-running commands.]',
    );
  }
  if (!all) notes.push(`[Still running after SIGKILL: ${survivorList(r.survivors)}.]`);
  if (!r.spawnError) notes.push(r.exitCode !== null ? `Exit code: ${r.exitCode}` : `Exit code: none (killed by ${r.signal ?? 'a signal'})`);
  const text = `${r.output === '' ? '(no output)' : r.output.replace(/\n$/, '')}\n\n${notes.join('\n')}`;
  return {
    content: [{ type: 'text', text }],
    isError: !!r.spawnError || r.timedOut || r.aborted || r.exitCode !== 0,
    details: {
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: r.timedOut,
      aborted: r.aborted,
      backgroundStopped: r.backgroundStopped,
      escaped: r.escaped,
      survivors: r.survivors.map((p) => ({ pid: p.pid, command: p.command })),
      timeoutMs,
      durationMs: r.durationMs,
      outputBytes: r.outputBytes,
      omittedBytes: r.omittedBytes,
      pid: r.pid,
      ...(args.description ? { description: args.description } : {}),
    },
  };
}

/** `records`: the host's record of running trees (the plugin passes it; bare tools run without). */
export function createBashTool(o: { records?: HostProcesses } = {}): ToolDefinition<BashArgs> {
  return { name: 'Bash', description, parameters: BashArgsSchema, execute: guarded((args, ctx) => runBash(args, ctx, o.records)) };
}

function graceFrom(ctx: { settings: { get(): Settings } }): number {
  try {
    return toolSettings(ctx.settings.get(), 'bash').killGraceMs;
  } catch {
    return 500;
  }
}

export default definePlugin({
  name: 'tool-bash',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('bash'),
  apply(ctx) {
    // The first host on this home since a crash stops what the crashed one left running.
    const records = acquireHostProcesses(ctx.paths.home, { reapGraceMs: graceFrom(ctx), warn: (m) => ctx.logger.warn(m) });
    ctx.registerTool(createBashTool({ records }));
    ctx.hooks.shutdown.tap(async () => void (await records.reaped));
    ctx.subscriptions.push({ dispose: () => releaseHostProcesses(records) });
  },
});

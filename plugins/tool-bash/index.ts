/**
 * Bash: one command in the workspace, in its own process group. Timeout (default 120 s, at most
 * 600 s) and abort stop the whole group; output is capped head-and-tail; the exit code is in
 * the result. Bash never reports edited files: its side effects are not guessed at.
 */
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { guarded } from '../tool-shared/results.js';
import { sectionSchema, toolSettings } from '../tool-shared/settings.js';
import { description } from './description.js';
import { runCommand } from './run-command.js';

export const BashArgsSchema = z.object({
  command: z.string().min(1).describe('The command to run with bash -c.'),
  timeout: z.number().int().min(1).optional().describe('Milliseconds before the command is stopped. Default 120000, at most 600000.'),
  description: z.string().optional().describe('What the command does, in 5-10 words.'),
});
export type BashArgs = z.output<typeof BashArgsSchema>;

async function runBash(args: BashArgs, ctx: ToolContext): Promise<ToolResult> {
  const s = toolSettings(ctx.settings, 'bash');
  const asked = args.timeout ?? s.defaultTimeoutMs;
  const timeoutMs = Math.min(asked, s.maxTimeoutMs);
  if (ctx.signal.aborted) return { content: [{ type: 'text', text: 'Not run: the run was stopped.' }], isError: true, details: { aborted: true } };
  const r = await runCommand(args.command, {
    cwd: ctx.workdir,
    timeoutMs,
    signal: ctx.signal,
    settings: s,
    onProgress: (recent, outputBytes, elapsedMs) => ctx.update({ content: [{ type: 'text', text: recent }], details: { outputBytes, elapsedMs } }),
  });
  const notes: string[] = [];
  if (r.spawnError) notes.push(`The command could not be started: ${r.spawnError}`);
  if (asked > timeoutMs) notes.push(`[The timeout was capped at ${timeoutMs} ms.]`);
  if (r.timedOut) notes.push(`[Timed out after ${timeoutMs} ms: the command and every process it started were stopped.]`);
  if (r.aborted) notes.push('[Stopped because the run was stopped: the command and every process it started were stopped.]');
  if (r.backgroundStopped) notes.push('[Processes the command left running in the background were stopped. Use ManagedProcess for long-running commands.]');
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
      timeoutMs,
      durationMs: r.durationMs,
      outputBytes: r.outputBytes,
      omittedBytes: r.omittedBytes,
      pid: r.pid,
      ...(args.description ? { description: args.description } : {}),
    },
  };
}

export function createBashTool(): ToolDefinition<BashArgs> {
  return { name: 'Bash', description, parameters: BashArgsSchema, execute: guarded(runBash) };
}

export default definePlugin({
  name: 'tool-bash',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('bash'),
  apply(ctx) {
    ctx.registerTool(createBashTool());
  },
});

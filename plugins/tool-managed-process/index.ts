/**
 * ManagedProcess: start, list, tail and stop long-running commands. One manager per plugin
 * instance; the kernel's shutdown hook stops every process tree it started (what left the
 * process group included), and the host's process record lets the next start stop them after
 * a crash.
 */
import { z } from 'zod';
import type { Settings, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { acquireHostProcesses, releaseHostProcesses } from '../../lib/tool-shared/process-records.js';
import { formatBytes, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { sectionSchema, toolSettings, type ManagedProcessSettings } from '../../lib/tool-shared/settings.js';
import { description, promptRules } from './description.js';
import { ProcessManager, type ManagedProcessInfo } from './process-manager.js';

export { ProcessManager } from './process-manager.js';

export const ManagedProcessArgsSchema = z
  .object({
    action: z.enum(['start', 'list', 'tail', 'stop']).describe('What to do.'),
    command: z.string().min(1).optional().describe('start: the command to run.'),
    name: z.string().min(1).max(80).optional().describe('start: a short name for the process. tail/stop: find the process by this name.'),
    id: z.string().min(1).optional().describe('tail/stop: the process id, e.g. "p1".'),
    lines: z.number().int().min(1).optional().describe('tail: how many lines. Default 50.'),
  })
  .superRefine((v, c) => {
    if (v.action === 'start' && !v.command) c.addIssue({ code: 'custom', path: ['command'], message: 'is required when action is "start"' });
    if ((v.action === 'tail' || v.action === 'stop') && !v.id && !v.name) c.addIssue({ code: 'custom', path: ['id'], message: `id (or name) is required when action is "${v.action}"` });
  });
export type ManagedProcessArgs = z.output<typeof ManagedProcessArgsSchema>;

function age(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

function statusText(p: ManagedProcessInfo): string {
  if (p.status === 'running') return `running for ${age(Date.now() - p.startedAt)}`;
  const end = p.exitCode !== null ? `exit code ${p.exitCode}` : `signal ${p.signal ?? '?'}`;
  return `${p.status} (${end})`;
}

function infoJson(p: ManagedProcessInfo) {
  return { id: p.id, name: p.name, command: p.command, pid: p.pid, status: p.status, exitCode: p.exitCode, signal: p.signal, startedAt: p.startedAt, endedAt: p.endedAt, conversationId: p.conversationId };
}

export function createManagedProcessTool(manager: ProcessManager): ToolDefinition<ManagedProcessArgs> {
  const pick = (args: ManagedProcessArgs): ManagedProcessInfo => {
    const key = args.id ?? args.name!;
    const found = manager.find(key);
    if (!found) {
      const known = manager.list().map((p) => `${p.id} (${p.name})`);
      throw new ToolFailure(`No managed process "${key}". ${known.length ? `Known: ${known.join(', ')}.` : 'None has been started.'}`);
    }
    return found;
  };
  const tailText = (id: string, lines: number) => {
    const t = manager.tail(id, lines);
    const dropped = t.droppedBytes ? `[${formatBytes(t.droppedBytes)} of older output no longer kept]\n` : '';
    return t.text ? `${dropped}${t.text}` : '(no output yet)';
  };

  const execute = async (args: ManagedProcessArgs, ctx: ToolContext): Promise<ToolResult> => {
    const s: ManagedProcessSettings = toolSettings(ctx.settings, 'managedProcess');
    switch (args.action) {
      case 'start': {
        if (manager.running() >= s.maxRunning) throw new ToolFailure(`${manager.running()} managed processes are running, the most allowed (tools.managedProcess.maxRunning). Stop one first.`);
        let p: ManagedProcessInfo;
        try {
          p = await manager.start(args.command!, { cwd: ctx.workdir, conversationId: ctx.conversationId, logLimitBytes: s.logLimitBytes, keepExited: s.keepExited, ...(args.name ? { name: args.name } : {}) });
        } catch (err) {
          throw new ToolFailure(`Could not start the command: ${(err as Error).message}`);
        }
        const ended = await manager.settle(p.id, s.startupWaitMs);
        const now = manager.find(p.id)!;
        const out = tailText(p.id, s.defaultTailLines);
        if (ended) {
          return {
            content: [{ type: 'text', text: `Process ${p.id} (${p.name}) ended at once: ${statusText(now)}.\n${out}` }],
            isError: now.exitCode !== 0,
            details: infoJson(now),
          };
        }
        return { content: [{ type: 'text', text: `Started ${p.id} (${p.name}), pid ${p.pid}. Use action "tail" with id "${p.id}" to see its output.\n${out}` }], details: infoJson(now) };
      }
      case 'list': {
        const all = manager.list();
        const text = all.length ? all.map((p) => `${p.id}\t${statusText(p)}\tpid ${p.pid}\t${p.name}${p.name !== p.command ? `: ${p.command}` : ''}`).join('\n') : 'No managed processes.';
        return { content: [{ type: 'text', text }], details: { processes: all.map(infoJson) } };
      }
      case 'tail': {
        const p = pick(args);
        const lines = Math.min(args.lines ?? s.defaultTailLines, s.maxTailLines);
        return { content: [{ type: 'text', text: `${p.id} (${p.name}), ${statusText(p)}:\n${tailText(p.id, lines)}` }], details: infoJson(p) };
      }
      case 'stop': {
        const p = pick(args);
        const { how, info, survivors, escaped } = await manager.stop(p.id, s.stopGraceMs);
        const what = how === 'already-exited' ? `had already ended (${statusText(info)})` : how === 'terminated' ? 'was stopped' : `did not stop on SIGTERM within ${s.stopGraceMs} ms and was killed`;
        const notes: string[] = [];
        if (escaped) notes.push(`[${escaped} process(es) it started had left its process group; they were stopped too.]`);
        // Never claim a stop that did not happen.
        if (survivors.length) notes.push(`[Not everything it started could be stopped. Still running after SIGKILL: ${survivors.map((x) => `pid ${x.pid}${x.command ? ` (${x.command})` : ''}`).join(', ')}.]`);
        const text = `${p.id} (${p.name}) ${what}.${notes.length ? `\n${notes.join('\n')}` : ''}\n${tailText(p.id, 20)}`;
        return { content: [{ type: 'text', text }], ...(survivors.length ? { isError: true } : {}), details: { ...infoJson(info), how, escaped, survivors: survivors.map((x) => ({ pid: x.pid, command: x.command })) } };
      }
    }
  };
  return { name: 'ManagedProcess', description, parameters: ManagedProcessArgsSchema, promptRules, execute: guarded(execute) };
}

function graceFrom(settings: Settings): number {
  try {
    return toolSettings(settings, 'managedProcess').stopGraceMs;
  } catch {
    return 2000;
  }
}

export default definePlugin({
  name: 'tool-managed-process',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('managedProcess'),
  apply(ctx) {
    // The first host on this home since a crash stops what the crashed one left running.
    const records = acquireHostProcesses(ctx.paths.home, { reapGraceMs: graceFrom(ctx.settings.get()), warn: (m) => ctx.logger.warn(m) });
    const manager = new ProcessManager(records);
    ctx.registerTool(createManagedProcessTool(manager));
    ctx.hooks.shutdown.tap(async () => {
      await Promise.all([manager.stopAll(graceFrom(ctx.settings.get())), records.reaped]);
    });
    // Safety nets: an unloaded plugin or a host exiting without shutdown leaves no process trees.
    const onExit = () => manager.killAllNow();
    process.once('exit', onExit);
    ctx.subscriptions.push({
      dispose() {
        process.removeListener('exit', onExit);
        manager.killAllNow();
        releaseHostProcesses(records);
      },
    });
  },
});

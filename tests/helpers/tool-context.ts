/**
 * A hand-built ToolContext for calling a tool's execute directly in unit tests, with a temp
 * workspace and home, recorded progress, and cleanup.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Settings, ToolContext, ToolProgress } from '../../plugin-api.js';

export interface TestToolContext extends ToolContext {
  updates: ToolProgress[];
}

export interface Sandbox {
  /** The workspace (a real path: symlinked temp dirs resolved). */
  workdir: string;
  home: string;
  uploads: string;
  /** A folder outside the workspace. */
  outside: string;
  ctx(overrides?: { settings?: Settings; signal?: AbortSignal; conversationId?: string }): TestToolContext;
  write(rel: string, content: string | Buffer): string;
  read(rel: string): string;
  exists(rel: string): boolean;
  cleanup(): void;
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export function makeSandbox(): Sandbox {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'la-tools-')));
  const workdir = path.join(root, 'work');
  const home = path.join(root, 'home');
  const uploads = path.join(home, 'uploads');
  const outside = path.join(root, 'outside');
  for (const d of [workdir, uploads, outside]) fs.mkdirSync(d, { recursive: true });
  return {
    workdir,
    home,
    uploads,
    outside,
    ctx(o = {}) {
      const updates: ToolProgress[] = [];
      return {
        toolCallId: 'call-1',
        toolName: 'test',
        conversationId: o.conversationId ?? 'conv-1',
        runId: 'run-1',
        mode: 'tools',
        workdir,
        signal: o.signal ?? new AbortController().signal,
        update: (p) => void updates.push(p),
        emit() {},
        logger: silent,
        paths: { home, settingsFile: path.join(home, 'settings.json'), uploads, plugins: path.join(home, 'plugins') },
        settings: o.settings ?? {},
        updates,
      };
    },
    write(rel, content) {
      const file = path.resolve(workdir, rel);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      return file;
    },
    read: (rel) => fs.readFileSync(path.resolve(workdir, rel), 'utf8'),
    exists: (rel) => fs.existsSync(path.resolve(workdir, rel)),
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}

/** The text of a result's text blocks. */
export function textOf(result: { content: Array<{ type: string; text?: string }> }): string {
  return result.content.flatMap((b) => (b.type === 'text' ? [b.text ?? ''] : [])).join('\n');
}

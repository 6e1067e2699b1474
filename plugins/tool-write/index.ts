/**
 * Write: create or overwrite a file inside the workspace, creating parent folders. Reports the
 * file to the edited-files ledger on success.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { describeFsError, formatBytes, guarded, ToolFailure } from '../tool-shared/results.js';
import { resolveSandboxPath } from '../tool-shared/sandbox.js';
import { description } from './description.js';

export const WriteArgsSchema = z.object({
  file_path: z.string().min(1).describe('The file to write: absolute, or relative to the workspace.'),
  content: z.string().describe('The complete content of the file.'),
});
export type WriteArgs = z.output<typeof WriteArgsSchema>;

async function writeFile(args: WriteArgs, ctx: ToolContext): Promise<ToolResult> {
  const p = await resolveSandboxPath(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'write' });
  const before = await fsp.stat(p.absolute).catch(() => undefined);
  if (before?.isDirectory()) throw new ToolFailure(`${p.display} is a folder; Write needs a file path.`);
  try {
    // Create parents at the real location: the sandbox checked where they land.
    await fsp.mkdir(path.dirname(p.real), { recursive: true });
    await fsp.writeFile(p.absolute, args.content, 'utf8');
  } catch (err) {
    throw new ToolFailure(describeFsError(err, p.display));
  }
  const bytes = Buffer.byteLength(args.content, 'utf8');
  const lines = args.content === '' ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0);
  const verb = before ? 'Overwrote' : 'Created';
  return {
    content: [{ type: 'text', text: `${verb} ${p.display} (${lines} line${lines === 1 ? '' : 's'}, ${formatBytes(bytes)}).` }],
    details: { path: p.display, created: !before, bytes, lines },
    editedFiles: [{ path: p.display, action: 'write' }],
  };
}

export function createWriteTool(): ToolDefinition<WriteArgs> {
  return { name: 'Write', description, parameters: WriteArgsSchema, execute: guarded(writeFile) };
}

export default definePlugin({
  name: 'tool-write',
  apply(ctx) {
    ctx.registerTool(createWriteTool());
  },
});

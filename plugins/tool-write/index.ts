/**
 * Write: create or overwrite a file inside the workspace, creating parent folders. Reports the
 * file to the edited-files ledger on success.
 *
 * The file is replaced atomically (a temp file renamed over it, in the parent folder the
 * sandbox walker holds open), so an abort or a failure leaves the old content whole, and a
 * folder swapped for a link mid-call cannot redirect the write. Replacing also means a hard
 * link to the file keeps the old content: the workspace entry gets a new file.
 */
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { FileIo } from '../tool-shared/abort.js';
import { describeFsError, formatBytes, guarded, ToolFailure } from '../tool-shared/results.js';
import { refuseTrailingSlash, resolveSandboxTarget } from '../tool-shared/sandbox.js';
import { refuseSpecial, SandboxEntry } from '../tool-shared/sandbox-fs.js';
import { description } from './description.js';

export const WriteArgsSchema = z.object({
  file_path: z.string().min(1).describe('The file to write: absolute, or relative to the workspace.'),
  content: z.string().describe('The complete content of the file.'),
});
export type WriteArgs = z.output<typeof WriteArgsSchema>;

async function writeFile(args: WriteArgs, ctx: ToolContext): Promise<ToolResult> {
  refuseTrailingSlash(args.file_path, 'Write');
  const { target: p, scope } = await resolveSandboxTarget(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'write' });
  const io = new FileIo(ctx.signal, `writing ${p.display}`);
  const data = Buffer.from(args.content, 'utf8');
  // The whole body is raced against abort; it finishes (and cleans up) in the background.
  const before = await io.run(
    SandboxEntry.use(p, scope, io, { create: true, followLast: true }, async (entry) => {
      const st = entry.stat;
      if (st?.isDirectory()) throw new ToolFailure(`${p.display} is a folder; Write needs a file path.`);
      if (st) refuseSpecial(st, p.display);
      await entry.replace(data, st?.mode);
      return st;
    }).catch((err: unknown) => {
      if (err instanceof ToolFailure) throw err;
      throw new ToolFailure(describeFsError(err, p.display));
    }),
  );
  const bytes = data.length;
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

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
import { FileIo } from '../../lib/tool-shared/abort.js';
import { describeFsError, formatBytes, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { refuseTrailingSlash, resolveSandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { readAll, refuseSpecial, SandboxEntry } from '../../lib/tool-shared/sandbox-fs.js';
import { DIFF_MAX_CHARS, diffJson, wholeFileDiff, type DiffDetails } from '../../lib/tool-shared/diff-details.js';
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
  const { before, diff } = await io.run(
    SandboxEntry.use(p, scope, io, { create: true, followLast: true }, async (entry) => {
      const st = entry.stat;
      if (st?.isDirectory()) throw new ToolFailure(`${p.display} is a folder; Write needs a file path.`);
      if (st) refuseSpecial(st, p.display);
      const diff = await previousContentDiff(entry, args.content, io);
      await entry.replace(data, st?.mode);
      return { before: st, diff };
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
    details: { path: p.display, created: !before, bytes, lines, diff: diffJson(diff) },
    editedFiles: [{ path: p.display, action: 'write' }],
  };
}

/**
 * What the write changes, for the UI (details.diff): the old content is read only when it is
 * small enough to show. Reading it is best effort: a file we may replace but not read gets no diff.
 */
async function previousContentDiff(entry: SandboxEntry, content: string, io: FileIo): Promise<DiffDetails> {
  const st = entry.stat;
  if (!st) return wholeFileDiff(null, content);
  // Characters can be up to 4 bytes, but a file this many bytes long is past the limit anyway.
  if (st.size > DIFF_MAX_CHARS) return { omitted: 'too_large' };
  try {
    const { fh } = await entry.openRead(`${entry.p.display} is a folder; Write needs a file path.`);
    try {
      const old = await readAll(fh, DIFF_MAX_CHARS, io, st.size);
      if (old.includes(0)) return { omitted: 'binary' };
      return wholeFileDiff(old.toString('utf8'), content, { tooLarge: old.length > DIFF_MAX_CHARS });
    } finally {
      await fh.close().catch(() => {});
    }
  } catch (err) {
    if (err instanceof ToolFailure) throw err;
    io.check();
    return { omitted: 'unreadable' };
  }
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

/**
 * Edit: exact string replacement in a workspace file. Fails, leaving the file untouched, when
 * the string is missing or (without replace_all) not unique; the message says which and how to
 * fix the call.
 *
 * The file is read through a handle opened inside the parent folder the sandbox walker holds,
 * and replaced by a temp file renamed in that same folder (see Write).
 */
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { FileIo } from '../../lib/tool-shared/abort.js';
import { describeFsError, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { refuseTrailingSlash, resolveSandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { readAll, SandboxEntry } from '../../lib/tool-shared/sandbox-fs.js';
import { diffJson, editRegionDiff } from '../../lib/tool-shared/diff-details.js';
import { description } from './description.js';

export const EditArgsSchema = z.object({
  file_path: z.string().min(1).describe('The file to edit: absolute, or relative to the workspace.'),
  old_string: z.string().min(1, 'must not be empty (use Write to create or replace a whole file)').describe('The exact text to replace.'),
  new_string: z.string().describe('The text to put in its place.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence. Default false: old_string must be unique.'),
});
export type EditArgs = z.output<typeof EditArgsSchema>;

const SNIPPET_CONTEXT = 3;
const SNIPPET_MAX_LINES = 40;

function lineOf(text: string, index: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function occurrences(text: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

function snippet(text: string, firstLine: number, spanLines: number): string {
  const lines = text.split('\n');
  const from = Math.max(1, firstLine - SNIPPET_CONTEXT);
  const to = Math.min(lines.length, firstLine + spanLines - 1 + SNIPPET_CONTEXT, from + SNIPPET_MAX_LINES - 1);
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`${String(n).padStart(6)}\t${lines[n - 1]!.replace(/\r$/, '')}`);
  return out.join('\n');
}

async function editFile(args: EditArgs, ctx: ToolContext): Promise<ToolResult> {
  refuseTrailingSlash(args.file_path, 'Edit');
  const { target: p, scope } = await resolveSandboxTarget(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'write' });
  if (args.old_string === args.new_string) throw new ToolFailure('old_string and new_string are identical; there is nothing to change.');
  const io = new FileIo(ctx.signal, `editing ${p.display}`);
  // Read and replace through the same held parent folder; the whole body is raced against abort.
  return io.run(
    SandboxEntry.use(p, scope, io, { followLast: true }, (entry) => editEntry(entry, args, io)).catch((err: unknown) => {
      if (err instanceof ToolFailure) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ToolFailure(`${p.display} does not exist. Use Write to create a file.`);
      throw new ToolFailure(describeFsError(err, p.display));
    }),
  );
}

async function editEntry(entry: SandboxEntry, args: EditArgs, io: FileIo): Promise<ToolResult> {
  const p = entry.p;
  const { fh, stat } = await entry.openRead(`${p.display} is a folder; Edit needs a file.`);
  let text: string;
  try {
    text = (await readAll(fh, Number.MAX_SAFE_INTEGER, io, stat.size)).toString('utf8');
  } finally {
    await fh.close().catch(() => {});
  }

  let oldS = args.old_string;
  let newS = args.new_string;
  let at = occurrences(text, oldS);
  // Models write "\n"; a file with Windows line endings has "\r\n". Match it in the file's style.
  if (at.length === 0 && text.includes('\r\n') && oldS.includes('\n') && !oldS.includes('\r\n')) {
    const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
    const alt = occurrences(text, crlf(oldS));
    if (alt.length) {
      oldS = crlf(oldS);
      newS = crlf(newS);
      at = alt;
    }
  }
  if (at.length === 0) {
    throw new ToolFailure(`old_string was not found in ${p.display}; the file is unchanged. Read the file again and copy the exact current text (whitespace and indentation included).`, { path: p.display, occurrences: 0 });
  }
  if (at.length > 1 && !args.replace_all) {
    const lines = at.slice(0, 10).map((i) => lineOf(text, i));
    throw new ToolFailure(
      `old_string occurs ${at.length} times in ${p.display} (lines ${lines.join(', ')}${at.length > 10 ? ', ...' : ''}); the file is unchanged. Add surrounding lines to make it unique, or pass replace_all: true to replace every occurrence.`,
      { path: p.display, occurrences: at.length },
    );
  }
  // split/join, not String.replace: "$&" and friends in new_string must stay literal.
  const next = args.replace_all ? text.split(oldS).join(newS) : text.slice(0, at[0]!) + newS + text.slice(at[0]! + oldS.length);
  await entry.replace(Buffer.from(next, 'utf8'), stat.mode);
  const count = args.replace_all ? at.length : 1;
  const firstLine = lineOf(next, at[0]!);
  const span = newS.split('\n').length;
  return {
    content: [{ type: 'text', text: `Edited ${p.display}: replaced ${count} occurrence${count === 1 ? '' : 's'}.\n${snippet(next, firstLine, span)}` }],
    details: { path: p.display, replacements: count, firstLine, diff: diffJson(editRegionDiff(text, next, at[0]!, at[count - 1]! + oldS.length)) },
    editedFiles: [{ path: p.display, action: 'edit' }],
  };
}

export function createEditTool(): ToolDefinition<EditArgs> {
  return { name: 'Edit', description, parameters: EditArgsSchema, execute: guarded(editFile) };
}

export default definePlugin({
  name: 'tool-edit',
  apply(ctx) {
    ctx.registerTool(createEditTool());
  },
});

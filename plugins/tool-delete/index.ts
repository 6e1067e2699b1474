/**
 * Delete: the one structured way to remove files and folders, inside the workspace or an extra
 * allowed root (`tools.deleteRoots`, for enabled skill folders). It reports what it removed and
 * feeds the edited-files ledger; its prompt rules keep deletion out of Bash.
 *
 * The entry is found by the sandbox walker without following a link in the last position (a
 * link is deleted itself), and a folder is listed and emptied through held handles (remove.ts),
 * so a subfolder swapped for a link mid-delete cannot send the removal outside.
 */
import { promises as fsp } from 'node:fs';
import { z } from 'zod';
import type { JsonObject, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { FileIo } from '../../lib/tool-shared/abort.js';
import { describeFsError, formatBytes, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { resolveSandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { SandboxEntry, specialKind } from '../../lib/tool-shared/sandbox-fs.js';
import { openChild } from '../../lib/tool-shared/sandbox-walk.js';
import { sectionSchema, toolSettings } from '../../lib/tool-shared/settings.js';
import { description, promptRules } from './description.js';
import { emptyDir, inventory, type Inventory } from './remove.js';

export const DeleteArgsSchema = z.object({
  path: z.string().min(1).describe('The file or folder to delete: absolute, or relative to the workspace.'),
  recursive: z.boolean().optional().describe('Required (true) to delete a folder that is not empty, with all it holds.'),
});
export type DeleteArgs = z.output<typeof DeleteArgsSchema>;

const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;

async function deletePath(args: DeleteArgs, ctx: ToolContext): Promise<ToolResult> {
  const extraRoots = toolSettings(ctx.settings, 'deleteRoots');
  const { target: p, scope } = await resolveSandboxTarget(args.path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'delete', extraRoots });
  const io = new FileIo(ctx.signal, `deleting ${p.display}`);
  // The last name is acted on through its held parent folder, never followed; the body is raced against abort.
  const { text, details } = await io.run(
    SandboxEntry.use(p, scope, io, { followLast: false }, (entry) => deleteEntry(entry, args, io)).catch((err: unknown) => {
      if (err instanceof ToolFailure) throw err;
      throw new ToolFailure(describeFsError(err, p.display));
    }),
  );
  return { content: [{ type: 'text', text }], details, editedFiles: [{ path: p.display, action: 'delete' }] };
}

async function deleteEntry(entry: SandboxEntry, args: DeleteArgs, io: FileIo): Promise<{ text: string; details: JsonObject }> {
  const { p, stat } = entry;
  const { dir, name } = entry.loc;
  if (!stat) throw new ToolFailure(`${p.display} does not exist; nothing was deleted.`);
  if (p.input.endsWith('/') && !stat.isDirectory()) {
    throw new ToolFailure(`Refused: path ends with '/' but ${p.display} is not a folder; nothing was deleted.`, { refused: true, reason: 'trailing-slash' });
  }
  io.check();
  if (stat.isSymbolicLink()) {
    const target = await fsp.readlink(entry.at).catch(() => '?');
    await fsp.unlink(entry.at);
    return { text: `Deleted symbolic link ${p.display} (it pointed to ${target}; the target was not touched).`, details: { path: p.display, kind: 'symlink', target } };
  }
  if (!stat.isDirectory()) {
    // A file, or a pipe, socket or device node: unlinking never opens it, so nothing can hang.
    await fsp.unlink(entry.at);
    const kind = specialKind(stat);
    if (kind) return { text: `Deleted ${p.display} (${kind}).`, details: { path: p.display, kind: 'special' } };
    return { text: `Deleted file ${p.display} (${formatBytes(stat.size)}).`, details: { path: p.display, kind: 'file', bytes: stat.size } };
  }
  const step = await openChild(dir, name, io);
  if ('link' in step) throw new ToolFailure(`${p.display} changed while it was being deleted (it was replaced by a symbolic link); nothing was deleted. Try again.`);
  let inv: Inventory;
  try {
    inv = await inventory(step.dir, p.display, io);
    const entries = inv.files + inv.folders + inv.links;
    if (entries > 0 && !args.recursive) {
      throw new ToolFailure(`${p.display} is a folder holding ${plural(entries, 'entry', 'entries')}; nothing was deleted. Pass recursive: true to delete it with everything in it.`, {
        path: p.display,
        entries,
      });
    }
    if (entries > 0) await emptyDir(step.dir, io);
  } finally {
    await step.dir.close();
  }
  await fsp.rmdir(entry.at);
  const entries = inv.files + inv.folders + inv.links;
  const parts = [plural(inv.files, 'file'), plural(inv.folders, 'folder'), ...(inv.links ? [plural(inv.links, 'link')] : [])];
  const list = inv.listed.map((l) => `- ${l}`).join('\n');
  const more = entries > inv.listed.length ? `\n- ... and ${entries - inv.listed.length} more` : '';
  const text = entries === 0 ? `Deleted empty folder ${p.display}.` : `Deleted folder ${p.display} with ${parts.join(', ')} (${formatBytes(inv.bytes)}):\n${list}${more}`;
  return { text, details: { path: p.display, kind: 'folder', files: inv.files, folders: inv.folders, links: inv.links, bytes: inv.bytes, removed: inv.listed } };
}

export function createDeleteTool(): ToolDefinition<DeleteArgs> {
  return { name: 'Delete', description, parameters: DeleteArgsSchema, promptRules, execute: guarded(deletePath) };
}

export default definePlugin({
  name: 'tool-delete',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('deleteRoots'),
  apply(ctx) {
    ctx.registerTool(createDeleteTool());
  },
});

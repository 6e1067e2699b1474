/**
 * Delete: the one structured way to remove files and folders, inside the workspace or an extra
 * allowed root (`tools.deleteRoots`, for enabled skill folders). It reports what it removed and
 * feeds the edited-files ledger; its prompt rules keep deletion out of Bash.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { JsonObject, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { describeFsError, formatBytes, guarded, ToolFailure } from '../tool-shared/results.js';
import { resolveSandboxPath } from '../tool-shared/sandbox.js';
import { sectionSchema, toolSettings } from '../tool-shared/settings.js';
import { description, promptRules } from './description.js';

export const DeleteArgsSchema = z.object({
  path: z.string().min(1).describe('The file or folder to delete: absolute, or relative to the workspace.'),
  recursive: z.boolean().optional().describe('Required (true) to delete a folder that is not empty, with all it holds.'),
});
export type DeleteArgs = z.output<typeof DeleteArgsSchema>;

const LIST_LIMIT = 30;

interface Inventory {
  files: number;
  folders: number;
  links: number;
  bytes: number;
  listed: string[];
}

/** What a folder holds (links not followed), listing the first entries. */
async function inventory(dir: string, shownAs: string, inv: Inventory = { files: 0, folders: 0, links: 0, bytes: 0, listed: [] }): Promise<Inventory> {
  const entries = await fsp.readdir(dir, { withFileTypes: true });
  for (const e of entries) {
    const full = path.join(dir, e.name);
    const shown = `${shownAs}/${e.name}`;
    if (e.isDirectory()) {
      inv.folders++;
      if (inv.listed.length < LIST_LIMIT) inv.listed.push(`${shown}/`);
      await inventory(full, shown, inv);
    } else {
      if (e.isSymbolicLink()) inv.links++;
      else inv.files++;
      if (inv.listed.length < LIST_LIMIT) inv.listed.push(shown);
      if (e.isFile()) inv.bytes += (await fsp.lstat(full).catch(() => ({ size: 0 }))).size;
    }
  }
  return inv;
}

const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;

async function deletePath(args: DeleteArgs, ctx: ToolContext): Promise<ToolResult> {
  const extraRoots = toolSettings(ctx.settings, 'deleteRoots');
  const p = await resolveSandboxPath(args.path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'delete', extraRoots });
  if (!p.exists) throw new ToolFailure(`${p.display} does not exist; nothing was deleted.`);
  const stat = await fsp.lstat(p.absolute);
  let text: string;
  let details: JsonObject;
  try {
    if (stat.isSymbolicLink()) {
      const target = await fsp.readlink(p.absolute).catch(() => '?');
      await fsp.unlink(p.absolute);
      text = `Deleted symbolic link ${p.display} (it pointed to ${target}; the target was not touched).`;
      details = { path: p.display, kind: 'symlink', target };
    } else if (stat.isDirectory()) {
      const inv = await inventory(p.absolute, p.display);
      const entries = inv.files + inv.folders + inv.links;
      if (entries > 0 && !args.recursive) {
        throw new ToolFailure(`${p.display} is a folder holding ${plural(entries, 'entry', 'entries')}; nothing was deleted. Pass recursive: true to delete it with everything in it.`, {
          path: p.display,
          entries,
        });
      }
      if (entries === 0) await fsp.rmdir(p.absolute);
      else await fsp.rm(p.absolute, { recursive: true });
      const parts = [plural(inv.files, 'file'), plural(inv.folders, 'folder'), ...(inv.links ? [plural(inv.links, 'link')] : [])];
      const list = inv.listed.map((l) => `- ${l}`).join('\n');
      const more = entries > inv.listed.length ? `\n- ... and ${entries - inv.listed.length} more` : '';
      text = entries === 0 ? `Deleted empty folder ${p.display}.` : `Deleted folder ${p.display} with ${parts.join(', ')} (${formatBytes(inv.bytes)}):\n${list}${more}`;
      details = { path: p.display, kind: 'folder', files: inv.files, folders: inv.folders, links: inv.links, bytes: inv.bytes, removed: inv.listed };
    } else {
      await fsp.unlink(p.absolute);
      text = `Deleted file ${p.display} (${formatBytes(stat.size)}).`;
      details = { path: p.display, kind: 'file', bytes: stat.size };
    }
  } catch (err) {
    if (err instanceof ToolFailure) throw err;
    throw new ToolFailure(describeFsError(err, p.display));
  }
  return { content: [{ type: 'text', text }], details, editedFiles: [{ path: p.display, action: 'delete' }] };
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

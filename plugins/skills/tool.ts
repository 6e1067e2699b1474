/**
 * The `Skill` tool: the second and third tiers of progressive disclosure. `{name}` returns the
 * skill's SKILL.md body (front matter removed) and the list of the other files in its folder;
 * `{name, file}` returns one of those files. The file tools cannot read user skills (they live
 * in `$LIVEAGENT_HOME`, outside the workspace), hence `file`.
 *
 * A file is read only inside the skill's folder: relative paths without `..`, and the real path
 * (links followed) must stay inside the folder's real path.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ToolContext, ToolDefinition } from '../../plugin-api.js';
import { guarded, textResult, ToolFailure } from '../../lib/tool-shared/results.js';
import { isInside, readSkillBody, type Skill } from './discover.js';

export const SkillArgsSchema = z.object({
  name: z.string().min(1).describe('The skill to load, as the catalog names it.'),
  file: z.string().min(1).optional().describe('A file of the skill to read instead, relative to its folder (e.g. "references/forms.md").'),
});
export type SkillArgs = z.output<typeof SkillArgsSchema>;

const MAX_FILE_BYTES = 256 * 1024;
const MAX_LISTED = 200;
const MAX_DEPTH = 4;

export const SKILL_TOOL_DESCRIPTION = `Load a skill from the catalog of available skills in the system prompt.
{"name": "<skill>"} returns the skill's instructions (its SKILL.md) and the list of the other files in its folder.
{"name": "<skill>", "file": "<relative path>"} returns one of those files (scripts, references, templates).
Load a skill as soon as a task matches its description, before acting, and follow its instructions.`;

/** Files of a skill folder other than SKILL.md, relative, sorted (hidden ones and links left out). */
export async function skillFiles(dir: string): Promise<{ files: string[]; more: boolean }> {
  const files: string[] = [];
  let more = false;
  const walk = async (abs: string, rel: string, depth: number): Promise<void> => {
    const entries = await fsp.readdir(abs, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (depth < MAX_DEPTH) await walk(path.join(abs, e.name), r, depth + 1);
      } else if (e.isFile() && r !== 'SKILL.md') {
        if (files.length >= MAX_LISTED) {
          more = true;
          return;
        }
        files.push(r);
      }
    }
  };
  await walk(dir, '', 1);
  return { files, more };
}

async function readSkillFile(skill: Skill, file: string): Promise<string> {
  if (file.includes('\0')) throw new ToolFailure('Refused: the file name contains a NUL character');
  if (path.isAbsolute(file) || file.split(/[\\/]/).includes('..')) {
    throw new ToolFailure(`Refused: "${file}" must be a path inside the skill folder, relative and without ".."`);
  }
  const realDir = await fsp.realpath(skill.dir);
  const real = await fsp.realpath(path.join(realDir, file)).catch(() => undefined);
  if (!real) throw new ToolFailure(`The skill "${skill.name}" has no file "${file}". Load the skill without "file" to list its files.`);
  if (!isInside(real, realDir)) throw new ToolFailure(`Refused: "${file}" resolves through a symbolic link to ${real}, outside the skill folder`);
  const st = await fsp.stat(real);
  if (st.isDirectory()) throw new ToolFailure(`"${file}" is a folder; load the skill without "file" to list its files`);
  if (!st.isFile()) throw new ToolFailure(`Refused: "${file}" is not a regular file`);
  if (st.size > MAX_FILE_BYTES) throw new ToolFailure(`"${file}" is ${st.size} bytes, over the ${MAX_FILE_BYTES}-byte limit for a skill file`);
  const buf = await fsp.readFile(real);
  if (buf.includes(0)) throw new ToolFailure(`"${file}" is a binary file (${st.size} bytes); only text files can be shown`);
  return buf.toString('utf8');
}

export interface SkillLookup {
  /** The enabled skills this run sees. */
  enabled(ctx: ToolContext): Promise<Skill[]>;
  /** True when `name` exists but is disabled. */
  isDisabled(name: string, ctx: ToolContext): Promise<boolean>;
}

export function skillTool(lookup: SkillLookup): ToolDefinition<SkillArgs> {
  return {
    name: 'Skill',
    description: SKILL_TOOL_DESCRIPTION,
    parameters: SkillArgsSchema,
    concurrency: 'parallel',
    execute: guarded(async (args, ctx) => {
      const skills = await lookup.enabled(ctx);
      const skill = skills.find((s) => s.name === args.name);
      if (!skill) {
        if (await lookup.isDisabled(args.name, ctx)) throw new ToolFailure(`The skill "${args.name}" is disabled in settings (skills.disabled).`);
        const known = skills.map((s) => s.name).join(', ') || 'none';
        throw new ToolFailure(`There is no skill named "${args.name}". Available skills: ${known}.`);
      }
      if (args.file) {
        const text = await readSkillFile(skill, args.file);
        return textResult(`<skill-file skill="${skill.name}" path="${args.file}">\n${text}\n</skill-file>`, { details: { skill: skill.name, file: args.file } });
      }
      const body = await readSkillBody(skill);
      const { files, more } = await skillFiles(skill.dir);
      const listing = files.length
        ? `\n\nOther files in the skill folder ${skill.dir} (read one with {"name": "${skill.name}", "file": "<path>"}):\n${files.map((f) => `- ${f}`).join('\n')}${more ? '\n- ... (more files not listed)' : ''}`
        : '';
      return textResult(`<skill name="${skill.name}" location="${skill.file}">\n${body}\n</skill>${listing}`, { details: { skill: skill.name, files } });
    }),
  };
}

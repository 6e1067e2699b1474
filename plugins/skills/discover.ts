/**
 * Finding skills (the Agent Skills format: a folder holding a SKILL.md whose front matter names
 * it and says when to use it, plus any files beside it) in three places:
 *
 *   $LIVEAGENT_HOME/skills/<name>/SKILL.md     user scope
 *   <workdir>/.agents/skills/<name>/SKILL.md   project scope (the cross-client folder)
 *   <workdir>/.claude/skills/<name>/SKILL.md   project scope (for projects that have one)
 *
 * On a name clash the project's skill wins over the user's (and `.agents` over `.claude`), with
 * a warning. A SKILL.md that does not parse or breaks the format's rules is skipped and reported
 * with its path and the problem; nothing here throws for a bad skill.
 *
 * A project skill must really lie inside the project: a repository could carry a skill folder
 * that is a link to `~/.ssh`, and skill files are read out to the model. User skills may be
 * links (people link skills they develop elsewhere).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { FrontMatterError, parseFrontMatter, type FrontValue } from './front-matter.js';

export type SkillScope = 'user' | 'project';

export interface Skill {
  name: string;
  description: string;
  scope: SkillScope;
  /** The skill's folder (absolute). */
  dir: string;
  /** Its SKILL.md (absolute): the catalog's `location`. */
  file: string;
  license?: string;
  compatibility?: string;
  allowedTools?: string;
}

export interface SkillProblem {
  file: string;
  problem: string;
}

export interface SkillScan {
  skills: Skill[];
  problems: SkillProblem[];
  /** Warnings about skills shadowed by another of the same name. */
  clashes: string[];
}

export const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_NAME = 64;
const MAX_DESCRIPTION = 1024;
const MAX_COMPATIBILITY = 500;
const MAX_SKILL_BYTES = 256 * 1024;
/** Folders looked at per skills root, at most (a stray huge folder must not stall a run). */
const MAX_ENTRIES = 500;

export interface SkillRoot {
  dir: string;
  scope: SkillScope;
  /** A project root's skills must resolve inside this folder. */
  confineTo?: string;
}

export function skillRoots(home: string, workdir?: string): SkillRoot[] {
  const roots: SkillRoot[] = [{ dir: path.join(home, 'skills'), scope: 'user' }];
  if (workdir) {
    for (const sub of ['.agents', '.claude']) roots.push({ dir: path.join(workdir, sub, 'skills'), scope: 'project', confineTo: workdir });
  }
  return roots;
}

export const isInside = (child: string, parent: string) => {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

const str = (v: FrontValue | undefined): string | undefined => (typeof v === 'string' ? v.trim() : undefined);

/** Check the front matter against the format; the problem, or the skill. */
export function validateSkill(data: Record<string, FrontValue>, folderName: string): { problem: string } | { name: string; description: string; license?: string; compatibility?: string; allowedTools?: string } {
  const name = str(data.name);
  if (!name) return { problem: 'the front matter has no "name"' };
  if (name.length > MAX_NAME) return { problem: `"name" is ${name.length} characters, over ${MAX_NAME}` };
  if (!NAME_PATTERN.test(name)) return { problem: `"name" ${JSON.stringify(name)} must be lowercase letters, digits and single hyphens (not at either end)` };
  if (name !== folderName) return { problem: `"name" ${JSON.stringify(name)} does not match its folder "${folderName}"` };
  const description = str(data.description);
  if (!description) return { problem: 'the front matter has no "description" (it tells the model when to use the skill)' };
  if (description.length > MAX_DESCRIPTION) return { problem: `"description" is ${description.length} characters, over ${MAX_DESCRIPTION}` };
  const compatibility = str(data.compatibility);
  if (compatibility && compatibility.length > MAX_COMPATIBILITY) return { problem: `"compatibility" is ${compatibility.length} characters, over ${MAX_COMPATIBILITY}` };
  const license = str(data.license);
  const allowedTools = str(data['allowed-tools']);
  return { name, description, ...(license ? { license } : {}), ...(compatibility ? { compatibility } : {}), ...(allowedTools ? { allowedTools } : {}) };
}

interface Cached {
  mtimeMs: number;
  size: number;
  result: { skill: Omit<Skill, 'scope' | 'dir' | 'file'> } | { problem: string };
}

/** Scans the roots; parsed SKILL.md files are remembered by path, mtime and size. */
export class SkillScanner {
  private cache = new Map<string, Cached>();

  async scan(roots: SkillRoot[]): Promise<SkillScan> {
    const problems: SkillProblem[] = [];
    const clashes: string[] = [];
    const byName = new Map<string, Skill>();
    // Later roots win: user first, then .claude, then .agents.
    const ordered = [roots[0]!, ...roots.slice(1).reverse()].filter(Boolean);
    for (const root of ordered) {
      for (const skill of await this.scanRoot(root, problems)) {
        const earlier = byName.get(skill.name);
        if (earlier) clashes.push(`skill "${skill.name}" in ${skill.dir} is used instead of the one in ${earlier.dir}`);
        byName.set(skill.name, skill);
      }
    }
    const skills = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { skills, problems, clashes };
  }

  private async scanRoot(root: SkillRoot, problems: SkillProblem[]): Promise<Skill[]> {
    const entries = await fsp.readdir(root.dir, { withFileTypes: true }).catch(() => []);
    const confine = root.confineTo ? await fsp.realpath(root.confineTo).catch(() => undefined) : undefined;
    if (root.confineTo && !confine) return [];
    const out: Skill[] = [];
    for (const e of entries.slice(0, MAX_ENTRIES)) {
      if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink())) continue;
      const dir = path.join(root.dir, e.name);
      const file = path.join(dir, 'SKILL.md');
      const realDir = await fsp.realpath(dir).catch(() => undefined);
      if (!realDir || !(await fsp.stat(realDir).then((s) => s.isDirectory(), () => false))) continue;
      if (confine && !isInside(realDir, confine)) {
        problems.push({ file, problem: `the skill folder resolves to ${realDir}, outside the project` });
        continue;
      }
      const realFile = await fsp.realpath(file).catch(() => undefined);
      if (!realFile) continue; // not a skill folder
      if (!isInside(realFile, realDir)) {
        problems.push({ file, problem: `SKILL.md resolves to ${realFile}, outside its folder` });
        continue;
      }
      const result = await this.parse(realFile, e.name);
      if ('problem' in result) problems.push({ file, problem: result.problem });
      else out.push({ ...result.skill, scope: root.scope, dir, file });
    }
    return out;
  }

  private async parse(file: string, folderName: string): Promise<Cached['result']> {
    const st = await fsp.stat(file).catch(() => undefined);
    if (!st?.isFile()) return { problem: 'SKILL.md is not a regular file' };
    if (st.size > MAX_SKILL_BYTES) return { problem: `SKILL.md is ${st.size} bytes, over ${MAX_SKILL_BYTES}` };
    const key = `${file}\0${folderName}`;
    const hit = this.cache.get(key);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.result;
    let result: Cached['result'];
    try {
      const { data } = parseFrontMatter(await fsp.readFile(file, 'utf8'));
      const v = validateSkill(data, folderName);
      result = 'problem' in v ? v : { skill: v };
    } catch (err) {
      result = { problem: err instanceof FrontMatterError ? `bad front matter: ${err.message}` : `cannot read it: ${(err as Error).message}` };
    }
    this.cache.set(key, { mtimeMs: st.mtimeMs, size: st.size, result });
    return result;
  }
}

/** The SKILL.md body (front matter removed), read fresh. */
export async function readSkillBody(skill: Skill): Promise<string> {
  const text = await fsp.readFile(skill.file, 'utf8');
  return parseFrontMatter(text).body.trim();
}

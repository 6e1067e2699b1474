/**
 * The skills catalog in the system prompt (stage SKILLS): the first tier of progressive
 * disclosure. Each enabled skill is named with its description and location, in the
 * `<available_skills>` form the Agent Skills client guide gives; the body comes on demand
 * through the Skill tool.
 *
 * Within a budget (`skills.catalogMaxChars`), as codex does: descriptions are shortened first,
 * then skills are left out (named in a closing line, so the model can still ask for them).
 */
import type { Skill } from './discover.js';

export const CATALOG_INTRO =
  'Skills are folders of instructions, scripts and resources for particular tasks. When a task matches a skill\'s description, call the Skill tool with its name before you start, and follow what it says; do not guess at a skill\'s contents.';

const SHORT_DESCRIPTION = 200;

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function entry(s: Skill, maxDescription?: number): string {
  const d = maxDescription && s.description.length > maxDescription ? `${s.description.slice(0, maxDescription - 1)}…` : s.description;
  return `<skill>\n<name>${s.name}</name>\n<description>${escapeXml(d)}</description>\n<location>${escapeXml(s.file)}</location>\n</skill>`;
}

export interface Catalog {
  /** The prompt text; undefined when no skill is enabled. */
  text?: string;
  /** Skills the budget left out. */
  omitted: string[];
  /** Descriptions were shortened to fit. */
  shortened: boolean;
}

export function buildCatalog(skills: Skill[], maxChars: number): Catalog {
  if (!skills.length) return { omitted: [], shortened: false };
  const wrap = (entries: string[], tail = '') => `${CATALOG_INTRO}\n<available_skills>\n${entries.join('\n')}\n</available_skills>${tail}`;
  const full = wrap(skills.map((s) => entry(s)));
  if (full.length <= maxChars) return { text: full, omitted: [], shortened: false };
  const short = skills.map((s) => entry(s, SHORT_DESCRIPTION));
  if (wrap(short).length <= maxChars) return { text: wrap(short), omitted: [], shortened: true };
  const kept: string[] = [];
  let used = wrap([]).length;
  let i = 0;
  for (; i < skills.length; i++) {
    const names = skills.slice(i + 1).map((s) => s.name).join(', ');
    // Keep room for the closing line that names what is left out.
    if (used + short[i]!.length + 1 + names.length + 80 > maxChars) break;
    kept.push(short[i]!);
    used += short[i]!.length + 1;
  }
  const omitted = skills.slice(i).map((s) => s.name);
  const tail = omitted.length ? `\nMore skills, left out of this list for space (load one with the Skill tool by name): ${omitted.join(', ')}` : '';
  return { text: wrap(kept, tail), omitted, shortened: true };
}

/** The skills catalog (plugins/skills/catalog.ts): the <available_skills> form, escaping, and the budget. */
import { describe, expect, it } from 'vitest';
import { buildCatalog, CATALOG_INTRO } from '../../plugins/skills/catalog.js';
import type { Skill } from '../../plugins/skills/discover.js';

const skill = (name: string, description: string): Skill => ({ name, description, scope: 'user', dir: `/h/skills/${name}`, file: `/h/skills/${name}/SKILL.md` });

describe('the skills catalog', () => {
  it('lists each skill with name, description and location, escaped; nothing at all without skills', () => {
    const c = buildCatalog([skill('a', 'Use <when> a & b.')], 8000);
    expect(c.text).toBe(`${CATALOG_INTRO}\n<available_skills>\n<skill>\n<name>a</name>\n<description>Use &lt;when&gt; a &amp; b.</description>\n<location>/h/skills/a/SKILL.md</location>\n</skill>\n</available_skills>`);
    expect(buildCatalog([], 8000)).toEqual({ omitted: [], shortened: false });
  });

  it('over budget: descriptions shrink first, then skills are left out and named', () => {
    const skills = Array.from({ length: 30 }, (_, i) => skill(`skill-${i}`, `${'long description '.repeat(40)}${i}`));
    const shortened = buildCatalog(skills.slice(0, 5), 2500);
    expect(shortened.shortened).toBe(true);
    expect(shortened.omitted).toEqual([]);
    expect(shortened.text!.length).toBeLessThanOrEqual(2500);
    expect(shortened.text!.match(/<skill>/g)).toHaveLength(5);
    const dropped = buildCatalog(skills, 3000);
    expect(dropped.text!.length).toBeLessThanOrEqual(3000);
    expect(dropped.omitted.length).toBeGreaterThan(0);
    expect(dropped.text).toContain(`left out of this list for space (load one with the Skill tool by name): ${dropped.omitted.join(', ')}`);
    expect(dropped.text!.match(/<skill>/g)!.length + dropped.omitted.length).toBe(30);
  });
});

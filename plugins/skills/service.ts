/**
 * The `skills` service, for the WebUI switch per skill (gateway-handlers.ts): the skills found (with their
 * enabled flag), the broken ones (with the problem), and `setEnabled`, which writes
 * `skills.disabled` through the settings store (validated, merged with changes made
 * elsewhere, and seen by the next run).
 */
import type { SettingsStore } from '../../plugin-api.js';
import type { Skill, SkillProblem, SkillScan } from './discover.js';
import { skillsSettings } from './settings.js';

export const SKILLS_SERVICE = 'skills';

export interface SkillInfo extends Skill {
  enabled: boolean;
}

export interface SkillsService {
  /** Every skill found (user scope, plus the project's with `workdir`), with its enabled flag. */
  list(opts?: { workdir?: string }): Promise<SkillInfo[]>;
  /** SKILL.md files that were skipped, with the reason. */
  problems(opts?: { workdir?: string }): Promise<SkillProblem[]>;
  /** Enable or disable a skill by name (writes `skills.disabled` in settings). */
  setEnabled(name: string, enabled: boolean): Promise<void>;
}

export function createSkillsService(scan: (workdir?: string) => Promise<SkillScan>, settings: SettingsStore): SkillsService {
  return {
    async list(opts = {}) {
      const { skills } = await scan(opts.workdir);
      const disabled = new Set(skillsSettings(settings.get()).disabled);
      return skills.map((s) => ({ ...s, enabled: !disabled.has(s.name) }));
    },
    async problems(opts = {}) {
      return (await scan(opts.workdir)).problems;
    },
    async setEnabled(name, enabled) {
      const current = settings.get();
      const section = (current.skills && typeof current.skills === 'object' ? current.skills : {}) as Record<string, unknown>;
      const disabled = new Set(skillsSettings(current).disabled);
      if (enabled) disabled.delete(name);
      else disabled.add(name);
      await settings.update({ skills: { ...section, disabled: [...disabled].sort() } });
    },
  };
}

/** The `skills` settings section (documented in docs/settings.md). */
import { z } from 'zod';
import type { Settings } from '../../plugin-api.js';

export const SkillsSettingsSchema = z.strictObject({
  /** Names of skills to hide from the catalog and the Skill tool. */
  disabled: z.array(z.string().min(1, 'must not be empty')).optional(),
  /** The catalog in the system prompt stays under this many characters (default 8000). */
  catalogMaxChars: z.number().int().min(500, 'must be at least 500').optional(),
});

export type SkillsSettingsInput = z.infer<typeof SkillsSettingsSchema>;

export interface SkillsSettings {
  disabled: string[];
  catalogMaxChars: number;
}

export const SKILLS_DEFAULTS: SkillsSettings = { disabled: [], catalogMaxChars: 8000 };

export function skillsSettings(settings: Settings, fallback: SkillsSettingsInput = {}): SkillsSettings {
  const r = SkillsSettingsSchema.safeParse(settings.skills ?? {});
  const given = r.success ? r.data : fallback;
  return { disabled: given.disabled ?? SKILLS_DEFAULTS.disabled, catalogMaxChars: given.catalogMaxChars ?? SKILLS_DEFAULTS.catalogMaxChars };
}

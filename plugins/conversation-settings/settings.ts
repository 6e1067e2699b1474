/**
 * What a conversation remembers of its own: the user's instructions for it (added to the system
 * prompt of every run in it) and the composer choices made in it (provider, model, mode,
 * working folder), so coming back to it (another tab, a reload) restores them while a new chat
 * starts from the defaults. Stored in the conversation's meta under {@link META_KEY}.
 */
import { z } from 'zod';
import type { JsonObject } from '../../plugin-api.js';

/** The conversation meta key. */
export const META_KEY = 'chatSettings';
/** Longest instructions kept (characters). */
export const MAX_INSTRUCTIONS = 20_000;

export const ConversationSettingsSchema = z.strictObject({
  instructions: z.string().max(MAX_INSTRUCTIONS, `instructions: must be at most ${MAX_INSTRUCTIONS} characters`).optional(),
  provider: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  mode: z.enum(['text', 'tools', 'agent-dev'], 'mode: must be "text", "tools" or "agent-dev"').optional(),
  workdir: z.string().min(1).max(4096).optional(),
});
export type ConversationSettings = z.infer<typeof ConversationSettingsSchema>;

/** A change: a key set to null is removed, an absent key is kept as it was. */
export const ConversationSettingsPatchSchema = z.strictObject({
  instructions: z.string().max(MAX_INSTRUCTIONS, `instructions: must be at most ${MAX_INSTRUCTIONS} characters`).nullable().optional(),
  provider: z.string().min(1).max(100).nullable().optional(),
  model: z.string().min(1).max(200).nullable().optional(),
  mode: z.enum(['text', 'tools', 'agent-dev'], 'mode: must be "text", "tools" or "agent-dev"').nullable().optional(),
  workdir: z.string().min(1).max(4096).nullable().optional(),
});
export type ConversationSettingsPatch = z.infer<typeof ConversationSettingsPatchSchema>;

/** The settings stored in a conversation's meta; what does not validate is dropped, never fatal. */
export function settingsFromMeta(meta: JsonObject | undefined): ConversationSettings {
  const raw = meta?.[META_KEY];
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const field = ConversationSettingsSchema.shape[k as keyof ConversationSettings];
    if (field && field.safeParse(v).success) out[k] = v;
  }
  return out as ConversationSettings;
}

/** `current` with `patch` applied; empty instructions count as none. */
export function applyPatch(current: ConversationSettings, patch: ConversationSettingsPatch): ConversationSettings {
  const next: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null || (k === 'instructions' && typeof v === 'string' && !v.trim())) delete next[k];
    else next[k] = v;
  }
  return next as ConversationSettings;
}

/** The system part for a conversation's instructions. */
export function instructionsPart(instructions: string | undefined): { id: string; text: string } | undefined {
  const text = instructions?.trim();
  if (!text) return undefined;
  return { id: 'conversation-instructions', text: `Instructions the user gave for this conversation (they apply to every reply in it):\n\n${text}` };
}

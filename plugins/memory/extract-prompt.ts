/**
 * What silent extraction asks the model, and how its answer is read. The answer is JSON; a
 * reply that is not (a chatty model, a refusal) proposes nothing rather than failing.
 */
import { z } from 'zod';
import type { MemoryScope } from './paths.js';

/** The first words of the extraction system prompt (tests and mocks recognize the request by them). */
export const EXTRACTION_MARKER = 'You curate the long-term memory of an AI assistant.';

export const EXTRACTION_SYSTEM = [
  EXTRACTION_MARKER,
  'You are shown the latest turns of a conversation between a user and the assistant, and the index of what is already remembered.',
  'Propose only durable facts that will still matter in future conversations: stable preferences of the user, facts about the user and their projects, conventions, decisions, recurring instructions.',
  'Do not propose: secrets or credentials of any kind, one-off task details, anything already remembered, guesses, or anything the assistant said that the user did not confirm. Most turns hold nothing worth remembering: then propose nothing.',
  'Each memory is one short self-contained sentence. scope "project" is for facts about the project in the working folder, "user" for everything else. file is a short kebab-case Markdown file name to keep it in (e.g. "preferences.md").',
  'Reply with JSON only, no prose: {"memories": [{"text": "...", "scope": "user", "file": "preferences.md"}]} and {"memories": []} when nothing qualifies. At most 5 memories.',
].join('\n');

const ReplySchema = z.object({
  memories: z
    .array(
      z.object({
        text: z.string().trim().min(1).max(1000),
        scope: z.enum(['user', 'project']).optional(),
        file: z.string().optional(),
      }),
    )
    .max(20),
});

export interface ProposedMemory {
  text: string;
  scope: MemoryScope;
  file: string;
}

/** The proposals of a reply; [] for anything that is not the JSON asked for. */
export function parseExtraction(reply: string): ProposedMemory[] {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(reply)?.[1] ?? reply;
  const start = fenced.indexOf('{');
  const end = fenced.lastIndexOf('}');
  if (start < 0 || end <= start) return [];
  let json: unknown;
  try {
    json = JSON.parse(fenced.slice(start, end + 1));
  } catch {
    return [];
  }
  const r = ReplySchema.safeParse(json);
  if (!r.success) return [];
  return r.data.memories.slice(0, 5).map((m) => ({ text: m.text, scope: m.scope ?? 'user', file: memoryFileName(m.file) }));
}

/** A safe file name for a proposal: kebab-case, `.md`, no folders, no leading dot. */
export function memoryFileName(given: string | undefined): string {
  const base = (given ?? '')
    .toLowerCase()
    .replace(/\.md$/, '')
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_.]+|[-_]+$/g, '')
    .slice(0, 60);
  return `${base || 'notes'}.md`;
}

const GREETING =
  /^(?:hi|hello|hey|yo|hiya|thanks|thank you|thx|ty|ok|okay|k|yes|no|yep|nope|sure|cool|great|nice|bye|good (?:morning|afternoon|evening|night)|你好|谢谢|好的|嗯)(?:\s+(?:there|again|so much|a lot|all))?[\s!.?,~]*$/i;

/** A user turn worth an extraction: long enough, and not a greeting or an acknowledgement. */
export function worthExtracting(userText: string, minChars: number): boolean {
  const t = userText.trim();
  return t.length >= minChars && !GREETING.test(t);
}

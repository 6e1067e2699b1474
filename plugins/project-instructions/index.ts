/**
 * project-instructions: pins the project's `AGENTS.md` / `CLAUDE.md` files (repository root
 * first, down to the run's working folder; see discover.ts) in the system prompt, right after
 * the user's own system prompt (stage USER_SETTINGS) and before skills and memory.
 *
 * The part is a system part rebuilt for every request, never a message, so a compaction can
 * never summarize it away (peers' users complain that CLAUDE.md gets summarized). It is marked
 * `cache`: it changes only when a file does, so it is a stable prefix for the prompt cache.
 *
 * The files are read once per run (the first request of the run; later rounds reuse the text,
 * so an edit mid-run does not break the cache) and remembered by mtime between runs.
 */
import type { SystemPart } from '../../plugin-api.js';
import { definePlugin, SystemPromptStages } from '../../core/define-plugin.js';
import { InstructionReader } from './discover.js';

const HEADER =
  'Project instructions, from the AGENTS.md / CLAUDE.md files of this repository (root first, then each folder down to the working folder). Follow them; where they disagree, the later (more specific) file wins, and a direct request of the user wins over both.';

/** Runs whose part is remembered; bounded in case a caller builds requests without ever ending a run. */
const MAX_RUNS = 64;

export default definePlugin({
  name: 'project-instructions',
  version: '0.1.0',
  apply(ctx) {
    const reader = new InstructionReader();
    const perRun = new Map<string, Promise<SystemPart | undefined>>();

    const partFor = (runId: string, workdir: string): Promise<SystemPart | undefined> => {
      let part = perRun.get(runId);
      if (!part) {
        part = reader.read(workdir).then(
          (found) => (found.text ? { id: 'project-instructions', text: `${HEADER}\n\n${found.text}`, cache: true } : undefined),
          (err: unknown) => {
            ctx.logger.warn(`cannot read the project instructions of ${workdir}: ${(err as Error)?.message ?? String(err)}`);
            return undefined;
          },
        );
        perRun.set(runId, part);
        if (perRun.size > MAX_RUNS) perRun.delete(perRun.keys().next().value!);
      }
      return part;
    };

    ctx.sessionHooks.systemPrompt.tap(
      async (parts, rctx) => {
        const part = await partFor(rctx.runId, rctx.workdir);
        return part ? [...parts, part] : parts;
      },
      { stage: SystemPromptStages.USER_SETTINGS },
    );
    ctx.sessionHooks.turnEnd.tap((result) => {
      perRun.delete(result.runId);
    });
  },
});

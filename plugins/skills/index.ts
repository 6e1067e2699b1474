/**
 * skills: Agent Skills (discover.ts) for the model, by progressive disclosure:
 * - the catalog of enabled skills (catalog.ts) in the system prompt at stage SKILLS, a system
 *   part rebuilt for every request, so compaction never drops it (peers' users complain that
 *   skills are forgotten after compaction);
 * - the `Skill` tool (tool.ts) returns a skill's instructions and files on demand.
 *
 * Skills are scanned once per run (at its first request; parsed files are remembered by
 * mtime), so a skill added or switched off applies from the next run. With no enabled skill
 * neither the catalog nor the tool is offered; in text mode (no tools) there is no catalog.
 * A broken SKILL.md is skipped with a warning naming the file and the problem (once per
 * problem), never a failure.
 *
 * Settings: the top-level `skills` section (settings.ts, docs/settings.md). The WebUI switches
 * skills on and off through the gateway messages `skills.*` (gateway-handlers.ts).
 */
import type { Settings } from '../../plugin-api.js';
import { definePlugin, SystemPromptStages } from '../../core/define-plugin.js';
import { buildCatalog } from './catalog.js';
import { SkillScanner, skillRoots, type Skill, type SkillScan } from './discover.js';
import { registerGatewayHandlers } from './gateway-handlers.js';
import { createSkillsService, SKILLS_SERVICE } from './service.js';
import { skillsSettings, SkillsSettingsSchema } from './settings.js';
import { skillTool } from './tool.js';

const MAX_RUNS = 64;

interface RunSkills {
  all: Skill[];
  enabled: Skill[];
}

export default definePlugin({
  name: 'skills',
  version: '0.1.0',
  settingsKey: 'skills',
  settingsSchema: SkillsSettingsSchema,
  apply(ctx) {
    const boot = ctx.config;
    const scanner = new SkillScanner();
    const said = new Set<string>();
    const once = (message: string) => {
      if (said.has(message)) return;
      said.add(message);
      ctx.logger.warn(message);
    };

    const scan = async (workdir?: string): Promise<SkillScan> => {
      const found = await scanner.scan(skillRoots(ctx.paths.home, workdir));
      for (const p of found.problems) once(`skipped the skill ${p.file}: ${p.problem}`);
      for (const c of found.clashes) once(c);
      return found;
    };

    const perRun = new Map<string, Promise<RunSkills>>();
    const forRun = (runId: string, workdir: string, settings: Settings): Promise<RunSkills> => {
      let got = perRun.get(runId);
      if (!got) {
        const disabled = new Set(skillsSettings(settings, boot).disabled);
        got = scan(workdir).then(
          ({ skills }) => ({ all: skills, enabled: skills.filter((s) => !disabled.has(s.name)) }),
          (err: unknown) => {
            ctx.logger.warn(`cannot scan the skill folders: ${(err as Error)?.message ?? String(err)}`);
            return { all: [], enabled: [] };
          },
        );
        perRun.set(runId, got);
        if (perRun.size > MAX_RUNS) perRun.delete(perRun.keys().next().value!);
      }
      return got;
    };

    ctx.registerTool(
      skillTool({
        enabled: async (t) => (await forRun(t.runId, t.workdir, t.settings)).enabled,
        isDisabled: async (name, t) => {
          const r = await forRun(t.runId, t.workdir, t.settings);
          return r.all.some((s) => s.name === name) && !r.enabled.some((s) => s.name === name);
        },
      }),
    );

    ctx.sessionHooks.tools.tap(async (tools, rctx) => {
      if (!tools.some((t) => t.name === 'Skill')) return tools;
      const { enabled } = await forRun(rctx.runId, rctx.workdir, rctx.settings);
      return enabled.length ? tools : tools.filter((t) => t.name !== 'Skill');
    });

    ctx.sessionHooks.systemPrompt.tap(
      async (parts, rctx) => {
        if (!rctx.tools.some((t) => t.name === 'Skill')) return parts;
        const { enabled } = await forRun(rctx.runId, rctx.workdir, rctx.settings);
        const catalog = buildCatalog(enabled, skillsSettings(rctx.settings, boot).catalogMaxChars);
        if (catalog.omitted.length) once(`the skills catalog is over skills.catalogMaxChars: left out ${catalog.omitted.join(', ')}`);
        return catalog.text ? [...parts, { id: 'skills', text: catalog.text, cache: true }] : parts;
      },
      { stage: SystemPromptStages.SKILLS },
    );

    ctx.sessionHooks.turnEnd.tap((result) => {
      perRun.delete(result.runId);
    });

    const service = createSkillsService(scan, ctx.settings);
    ctx.provide(SKILLS_SERVICE, service);
    // The gateway may load after this plugin: its handlers are registered once every plugin is in.
    ctx.hooks.ready.tap(() => registerGatewayHandlers(ctx, service));
  },
});

/**
 * The AskUserQuestion tool. `prepareArguments` stamps one deadline into the arguments (so
 * `tool_execution_start` carries it to every client); `execute` registers the pending entry,
 * only then announces the question, and waits for the first outcome.
 */
import type { JsonObject, Logger, Settings, ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { description } from './description.js';
import { describeOutcome, type PendingQuestions } from './pending.js';
import { buildResult } from './result.js';
import { AskArgsSchema, AskSettingsSchema, DEADLINE_KEY, type AskArgs, type AskSettings } from './schema.js';

export const TOOL_NAME = 'AskUserQuestion';

/** The plugin's settings as of this run (settings can change between runs); boot's when invalid. */
function currentSettings(settings: Settings, fallback: AskSettings, logger: Logger): AskSettings {
  const r = AskSettingsSchema.safeParse(settings.askUserQuestion);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  logger.warn(`settings askUserQuestion.${i.path.map(String).join('.')}: ${i.message}; using the values from start-up`);
  return fallback;
}

function timeoutOf(s: AskSettings): number | null {
  return s.timeoutMs ? s.timeoutMs : null;
}

function isStamped(args: AskArgs): args is AskArgs & { [DEADLINE_KEY]: number | null } {
  const v = args[DEADLINE_KEY];
  return v === null || (typeof v === 'number' && Number.isFinite(v));
}

export function createAskUserQuestionTool(table: PendingQuestions, bootSettings: AskSettings): ToolDefinition<AskArgs> {
  return {
    name: TOOL_NAME,
    description,
    parameters: AskArgsSchema,
    concurrency: 'exclusive',
    hideArgumentDeltas: true,
    prepareArguments(args, ctx) {
      // Stamped once: arguments that already carry a deadline keep it.
      if (isStamped(args)) return args;
      const timeoutMs = timeoutOf(currentSettings(ctx.settings, bootSettings, ctx.logger));
      return { ...args, [DEADLINE_KEY]: timeoutMs === null ? null : Date.now() + timeoutMs };
    },
    async execute(args, ctx: ToolContext): Promise<ToolResult> {
      const settings = currentSettings(ctx.settings, bootSettings, ctx.logger);
      const timeoutMs = timeoutOf(settings);
      // Normally stamped by prepareArguments; a caller that skipped it gets a deadline here.
      const deadlineAt = isStamped(args) ? args[DEADLINE_KEY] : timeoutMs === null ? null : Date.now() + timeoutMs;
      const questions = args.questions;
      const settled = table.ask(
        { toolCallId: ctx.toolCallId, conversationId: ctx.conversationId, runId: ctx.runId, questions, deadlineAt, maxCustomLength: settings.maxCustomLength },
        ctx.signal,
      );
      // The entry exists now, so an answer sent the moment a client sees this event is taken.
      const announced = table.isPending(ctx.conversationId, ctx.toolCallId);
      if (announced) {
        ctx.emit('ask_user_question', {
          toolCallId: ctx.toolCallId,
          conversationId: ctx.conversationId,
          questions: questions as unknown as JsonObject[],
          deadlineAt,
          maxCustomLength: settings.maxCustomLength,
        });
      }
      const s = await settled;
      if (announced) {
        ctx.emit('ask_user_question_settled', {
          toolCallId: ctx.toolCallId,
          conversationId: ctx.conversationId,
          outcome: s.outcome,
          answers: s.answers as unknown as JsonObject[],
          ...(s.reason ? { reason: s.reason } : {}),
        });
      }
      ctx.logger.debug(`question ${ctx.toolCallId} ${describeOutcome(s.outcome)}`);
      return buildResult(questions, s, deadlineAt, timeoutMs);
    },
  };
}

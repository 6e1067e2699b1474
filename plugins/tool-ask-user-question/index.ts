/**
 * AskUserQuestion: the builtin tool that asks the user multiple-choice questions and waits for
 * the answer from any client (desktop, WebUI through the gateway, the CLI). Provides the
 * `askUserQuestion` service (answer, pending, cancelConversation) and `cli.interaction`.
 * Settings: the top-level `askUserQuestion` section ({ timeoutMs, maxCustomLength }).
 */
import { definePlugin } from '../../core/define-plugin.js';
import { createCliInteraction } from './cli.js';
import { PendingQuestions } from './pending.js';
import { AskSettingsSchema } from './schema.js';
import { ASK_USER_QUESTION_SERVICE, createService } from './service.js';
import { createAskUserQuestionTool } from './tool.js';

export default definePlugin({
  name: 'tool-ask-user-question',
  settingsKey: 'askUserQuestion',
  settingsSchema: AskSettingsSchema,
  apply(ctx) {
    const table = new PendingQuestions();
    const service = createService(table);
    ctx.registerTool(createAskUserQuestionTool(table, ctx.config));
    ctx.provide(ASK_USER_QUESTION_SERVICE, service);
    ctx.provide('cli.interaction', createCliInteraction(table, service));
    // Runs are stopped before shutdown, which cancels their questions; this catches the rest.
    ctx.hooks.shutdown.tap(() => table.cancelAll('the host is shutting down'));
    // Conversation lifecycle is the runtime's: a delete stops the run first, which cancels its
    // questions as "the conversation was deleted" (pending.ts); the hook then drops any left.
    ctx.hooks.conversationDeleted.tap(({ conversationId }) => void table.cancelConversation(conversationId));
    ctx.subscriptions.push({ dispose: () => table.cancelAll('the AskUserQuestion plugin was unloaded') });
  },
});

/**
 * The Scheduled page's form round-trip: a task opened for editing and saved unchanged gives back
 * the same action, fields the form does not show (a model-created prompt task's provider and
 * model) included.
 */
import { describe, expect, it } from 'vitest';
import { formOf, patchOf } from '../../webui/src/lib/cron-form.js';
import type { CronTask } from '../../webui/src/stores/cron.js';

describe('cron form', () => {
  it('keeps a prompt task whole through edit and save, provider and model included', () => {
    const action = { kind: 'prompt' as const, prompt: 'summarize the news', mode: 'tools' as const, provider: 'openai', model: 'gpt-5-mini', workdir: '/srv/w', conversationId: 'c_1', timeoutMs: 60000 };
    const task = { id: 't_1', name: 'news', schedule: '0 9 * * *', timezone: 'UTC', missed: 'once', overlap: 'skip', maxExecutions: null, enabled: true, action } as unknown as CronTask;
    expect(patchOf(formOf(task)).action).toEqual(action);
  });
});

/**
 * The Cron tool through a real tool loop (fake provider): the model creates, lists and removes
 * tasks; what it creates is labelled created_by model and runs in the run's workdir; bad
 * schedules come back as an error result the model can fix.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolResultBlock } from '../../plugin-api.js';
import type { FakeStep } from '../helpers/fake-provider.js';
import { bootCron, cleanupCron, directTasks } from './cron-harness.js';

afterEach(cleanupCron);

describe('the Cron tool', () => {
  it('creates, lists and removes tasks for the model', async () => {
    let script: FakeStep[] = [];
    const boot = await bootCron({ steps: (_req, i) => script[i] ?? { text: 'done' }, start: false });
    const cronTool = boot.kernel.runtime.tools().find((t) => t.name === 'Cron');
    expect(cronTool?.modes).toEqual(['tools', 'agent-dev']);
    const turn = async (input: Record<string, unknown>) => {
      script = [{ toolCalls: [{ id: `call_${script.length}`, name: 'Cron', input }] }, { text: 'done' }];
      boot.provider.requests.length = 0;
      const run = boot.kernel.runtime.startRun({ input: [{ type: 'text', text: 'schedule it' }], mode: 'tools', workdir: boot.home });
      const result = await run.result;
      const block = result.messages.find((m) => m.role === 'tool')!.content[0] as ToolResultBlock;
      return { block, text: (block.content[0] as { text: string }).text, conversationId: result.conversationId };
    };

    const created = await turn({ action: 'create', name: 'standup', schedule: '0 9 * * 1-5', timezone: 'Europe/Berlin', prompt: 'summarize yesterday', this_conversation: true });
    expect(created.block.isError).toBe(false);
    expect(created.text).toMatch(/Created task t_[0-9a-f]+ "standup"\. Next fire times:/);
    expect(created.text).toMatch(/liveagent serve/); // this host does not run the scheduler
    const db = await directTasks(boot.home);
    const [task] = await db.list();
    expect(task).toMatchObject({ name: 'standup', createdBy: 'model', timezone: 'Europe/Berlin', action: { kind: 'prompt', prompt: 'summarize yesterday', workdir: boot.home, conversationId: created.conversationId, mode: 'tools' } });
    expect(task!.nextFireTimes).toHaveLength(3);

    const listed = await turn({ action: 'list' });
    expect(listed.text).toContain(`${task!.id} "standup" (prompt, 0 9 * * 1-5, Europe/Berlin, on)`);

    const bad = await turn({ action: 'create', schedule: '99 * * * *', command: 'echo hi' });
    expect(bad.block.isError).toBe(true);
    expect(bad.text).toMatch(/invalid schedule "99 \* \* \* \*": .*minute/);
    const two = await turn({ action: 'create', schedule: '* * * * *', command: 'echo', url: 'http://x' });
    expect(two.text).toBe('create needs exactly one of prompt, command or url');

    const removed = await turn({ action: 'remove', id: task!.id });
    expect(removed.text).toBe(`Removed task ${task!.id} "standup".`);
    expect(await db.list()).toEqual([]);
    const unknown = await turn({ action: 'remove', id: task!.id });
    expect(unknown.block.isError).toBe(true);
  });

  it('a host that never calls start() (the chat CLI) never runs a due task', async () => {
    const boot = await bootCron({ start: false });
    const task = await boot.cron.addTask({ schedule: '* * * * * *', action: { kind: 'bash', command: 'true', workdir: boot.home } }, 'api');
    await new Promise((r) => setTimeout(r, 1500));
    const db = await directTasks(boot.home);
    expect(await db.store.runs(task.id)).toEqual([]);
    expect(await db.store.lease()).toBeUndefined();
    expect(boot.cron.isScheduling()).toBe(false);
  });

  it('is not offered in text mode', async () => {
    const boot = await bootCron({ start: false });
    await boot.kernel.runtime.startRun({ input: [{ type: 'text', text: 'hi' }], mode: 'text' }).result;
    expect(boot.provider.requests[0]!.tools.map((t) => t.name)).not.toContain('Cron');
  });
});

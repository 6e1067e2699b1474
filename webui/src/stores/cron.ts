/**
 * Scheduled tasks (the cron plugin's gateway messages, docs/gateway-protocol.md "Cron"): the task
 * list, each task's run history as far as it was loaded, and the live `cron.tasks` / `cron.run`
 * broadcasts folded in. The shapes mirror plugins/cron/task-spec.ts; they are restated here
 * because the WebUI's type-check sees only the gateway protocol, not the plugin's sources.
 */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { client, GatewayError, type ClientRequest } from '../api/client.js';

export type RunStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'missed';
export type CronAction =
  | { kind: 'prompt'; prompt: string; mode?: 'text' | 'tools' | 'agent-dev'; provider?: string; model?: string; workdir?: string; conversationId?: string; timeoutMs?: number }
  | { kind: 'bash'; command: string; workdir?: string; timeoutMs?: number }
  | { kind: 'http'; url: string; method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number };

export interface CronRun {
  id: number;
  taskId: string;
  status: RunStatus;
  scheduledAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  conversationId: string | null;
  output: string | null;
  error: string | null;
}

export interface CronTask {
  id: string;
  name: string;
  schedule: string;
  timezone: string;
  action: CronAction;
  enabled: boolean;
  maxExecutions: number | null;
  executions: number;
  overlap: 'skip' | 'allow';
  missed: 'skip' | 'once';
  createdBy: 'cli' | 'model' | 'gateway' | 'api';
  createdAt: number;
  updatedAt: number;
  nextFireAt: number | null;
  nextFireTimes: number[];
  lastRun: CronRun | null;
}

export interface CronPreview {
  schedule: string;
  timezone: string;
  next: number[];
}

/** Runs kept in memory per task (the history panel shows the newest). */
export const RUN_LIMIT = 20;

/** Plugin messages are not in the built-in protocol union; the handler validates them. */
function cronRequest<T>(msg: { type: string; [field: string]: unknown }): Promise<T> {
  return client().request<T>(msg as unknown as ClientRequest);
}

export const useCronStore = defineStore('cron', () => {
  const tasks = ref<CronTask[] | null>(null);
  const loadError = ref<string | null>(null);
  /** True when the server has no cron plugin (the messages are refused as unknown). */
  const unavailable = ref(false);
  const runs = ref<Record<string, CronRun[]>>({});
  /** Tasks whose history is open (kept here so it survives a visit to a run's conversation). */
  const historyOpen = ref(new Set<string>());
  let listening = false;

  const sorted = computed(() => [...(tasks.value ?? [])].sort((a, b) => a.createdAt - b.createdAt));

  function listen(): void {
    if (listening) return;
    listening = true;
    client().on('extension', (m) => {
      if (m.name === 'cron.tasks') {
        const list = (m.data as { tasks?: unknown } | undefined)?.tasks;
        if (Array.isArray(list)) setTasks(list as CronTask[]);
      } else if (m.name === 'cron.run') {
        const run = (m.data as { run?: CronRun } | undefined)?.run;
        if (run && typeof run.taskId === 'string') foldRun(run);
      }
    });
  }

  function setTasks(list: CronTask[]): void {
    tasks.value = list;
    // Histories of removed tasks go with them.
    const ids = new Set(list.map((t) => t.id));
    for (const id of Object.keys(runs.value)) if (!ids.has(id)) delete runs.value[id];
  }

  function toggleHistory(taskId: string, open = !historyOpen.value.has(taskId)): void {
    const next = new Set(historyOpen.value);
    if (open) next.add(taskId);
    else next.delete(taskId);
    historyOpen.value = next;
  }

  function foldRun(run: CronRun): void {
    const task = tasks.value?.find((t) => t.id === run.taskId);
    if (task && (!task.lastRun || task.lastRun.id <= run.id)) task.lastRun = run;
    const list = runs.value[run.taskId];
    if (!list) return; // history not open: loaded fresh when it is
    const at = list.findIndex((r) => r.id === run.id);
    if (at >= 0) list[at] = run;
    else {
      list.unshift(run);
      list.sort((a, b) => b.id - a.id);
      if (list.length > RUN_LIMIT) list.length = RUN_LIMIT;
    }
  }

  async function load(): Promise<void> {
    listen();
    try {
      const data = await cronRequest<{ tasks: CronTask[] }>({ type: 'cron.list' });
      setTasks(data.tasks);
      loadError.value = null;
      unavailable.value = false;
    } catch (err) {
      // An unregistered type fails the built-in schema on its `type` field.
      unavailable.value = err instanceof GatewayError && err.code === 'bad_request' && /^type\b/.test(err.message);
      loadError.value = (err as Error).message;
    }
  }

  function replace(task: CronTask): void {
    if (!tasks.value) return;
    const at = tasks.value.findIndex((t) => t.id === task.id);
    if (at >= 0) tasks.value[at] = task;
    else tasks.value.push(task);
  }

  async function add(input: Record<string, unknown>): Promise<CronTask> {
    const { task } = await cronRequest<{ task: CronTask }>({ type: 'cron.add', task: input });
    replace(task);
    return task;
  }

  async function update(taskId: string, patch: Record<string, unknown>): Promise<CronTask> {
    const { task } = await cronRequest<{ task: CronTask }>({ type: 'cron.update', taskId, patch });
    replace(task);
    return task;
  }

  async function setEnabled(taskId: string, enabled: boolean): Promise<void> {
    const task = tasks.value?.find((t) => t.id === taskId);
    const before = task?.enabled;
    if (task) task.enabled = enabled;
    try {
      await update(taskId, { enabled });
    } catch (err) {
      if (task && before !== undefined) task.enabled = before;
      throw err;
    }
  }

  async function remove(taskId: string): Promise<void> {
    await cronRequest({ type: 'cron.remove', taskId });
    if (tasks.value) tasks.value = tasks.value.filter((t) => t.id !== taskId);
    delete runs.value[taskId];
  }

  async function loadRuns(taskId: string): Promise<void> {
    const data = await cronRequest<{ runs: CronRun[] }>({ type: 'cron.runs', taskId, limit: RUN_LIMIT });
    runs.value[taskId] = data.runs;
  }

  function preview(schedule: string, timezone?: string): Promise<CronPreview> {
    return cronRequest<CronPreview>({ type: 'cron.preview', schedule, ...(timezone ? { timezone } : {}) });
  }

  return { tasks, sorted, loadError, unavailable, runs, historyOpen, toggleHistory, load, add, update, setEnabled, remove, loadRuns, preview };
});

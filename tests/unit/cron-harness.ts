/**
 * Shared by the cron unit tests: a kernel with the fake provider and the cron plugin in a temp
 * home (fast timings), and a second connection to the same cron database, as the CLI has.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Plugin, Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import cronPlugin from '../../plugins/cron/index.js';
import { CRON_SERVICE, type CronService } from '../../plugins/cron/service.js';
import { cronSettings } from '../../plugins/cron/settings.js';
import { CronTasks, openCronStore } from '../../plugins/cron/tasks.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

export const FAST = { pollIntervalMs: 100, leaseMs: 1500, leaseRenewMs: 300, lateToleranceMs: 1000, killGraceMs: 100 };

const kernels: Kernel[] = [];
const homes: string[] = [];
const stores: CronTasks[] = [];

export function tempHome(): string {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'la-cron-')));
  homes.push(home);
  return home;
}

export async function bootCron(opts: { home?: string; steps?: Parameters<typeof fakeProvider>[0]; cron?: Record<string, unknown>; start?: boolean } = {}) {
  const home = opts.home ?? tempHome();
  const provider = fakeProvider(opts.steps ?? ((): FakeStep => ({ text: 'scheduled reply' })));
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const settings: Settings = { defaultProvider: 'fake', cron: { ...FAST, ...(opts.cron ?? {}) } };
  const kernel = await createKernel({ home, plugins: [plugin, cronPlugin], settings, thirdParty: false });
  kernels.push(kernel);
  const cron = kernel.services.get<CronService>(CRON_SERVICE)!;
  if (opts.start !== false) await cron.start();
  return { kernel, cron, provider, home };
}

/** Another connection to the home's cron database (what `liveagent cron` uses). */
export async function directTasks(home: string, cron: Record<string, unknown> = FAST): Promise<CronTasks> {
  const settings = cronSettings(cron);
  const t = new CronTasks(await openCronStore(home, settings), () => settings);
  stores.push(t);
  return t;
}

export async function cleanupCron(): Promise<void> {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const s of stores.splice(0)) await s.store.close();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
}

export async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 8000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

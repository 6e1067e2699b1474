/**
 * @opentelemetry/api is optional for the debug log: never imported while `debugLog.otel` is off,
 * imported lazily when it is on, and a missing package only costs a warning (runs go on, the
 * JSONL is still written). Here the package is made unimportable with a module mock.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import debugLogPlugin, { DEBUG_LOG_SERVICE, type DebugLogService } from '../../plugins/debug-log/index.js';
import { loadOtelApi } from '../../plugins/debug-log/otel.js';
import { fakeProvider } from '../helpers/fake-provider.js';
import { trackResources } from '../helpers/cleanup.js';

const imports = vi.hoisted(() => ({ count: 0 }));
vi.mock('@opentelemetry/api', () => {
  imports.count++;
  throw new Error("Cannot find package '@opentelemetry/api'");
});

const t = trackResources();
const ROOT = path.resolve(import.meta.dirname, '../..');

async function boot(debugLog: Record<string, unknown>) {
  const warnings: string[] = [];
  const provider = fakeProvider(() => ({ text: 'hi' }));
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const kernel = await createKernel({
    home: t.tmp('la-debuglog-'),
    plugins: [plugin, debugLogPlugin],
    settings: { debugLog },
    thirdParty: false,
    logSink: (level, _source, message) => void (level === 'warn' && warnings.push(message)),
  });
  t.kernels.push(kernel);
  const result = await kernel.runtime.startRun({ input: [{ type: 'text', text: 'hello' }], mode: 'agent-dev', provider: 'fake' }).result;
  const service = kernel.services.get<DebugLogService>(DEBUG_LOG_SERVICE)!;
  await service.flush();
  return { result, warnings, file: service.fileFor(result.conversationId) };
}

describe('@opentelemetry/api is optional', () => {
  it('no plugin file imports it statically', () => {
    const dir = path.join(ROOT, 'plugins/debug-log');
    for (const f of fs.readdirSync(dir)) expect(fs.readFileSync(path.join(dir, f), 'utf8')).not.toMatch(/^\s*import\s[^(]*['"]@opentelemetry/m);
  });

  it('with otel off it is never imported', async () => {
    const before = imports.count;
    const { result, file } = await boot({ otel: false });
    expect(result.status).toBe('completed');
    expect(fs.existsSync(file)).toBe(true);
    expect(imports.count).toBe(before);
  });

  it('with otel on and the package missing, runs go on with a warning and the JSONL is still written', async () => {
    const before = imports.count;
    const { result, warnings, file } = await boot({ otel: true });
    expect(result.status).toBe('completed');
    expect(imports.count).toBeGreaterThan(before);
    expect(await loadOtelApi()).toBeUndefined();
    expect(warnings.some((w) => w.includes('@opentelemetry/api cannot be imported'))).toBe(true);
    expect(fs.readFileSync(file, 'utf8')).toContain('"kind":"agent_end"');
  });
});

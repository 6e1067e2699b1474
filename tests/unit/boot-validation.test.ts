/**
 * Boot validates settings, plugin manifests, plugin settings and registrations once each; zod
 * would compile a fast path (`new Function`) for every object schema on its first parse, ~1 ms
 * each, which only pays for schemas parsed over and over (core/validate-once.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKernel } from '../../core/kernel.js';
import { builtinPlugins } from '../../hosts/builtins.js';

const RealFunction = globalThis.Function;
afterEach(() => {
  globalThis.Function = RealFunction;
});

/** Run `fn` counting zod's compiled parsers (its generated bodies start `return function (`). */
async function countCompiled<T>(fn: () => Promise<T>): Promise<{ value: T; compiled: string[] }> {
  const compiled: string[] = [];
  globalThis.Function = new Proxy(RealFunction, {
    construct(target, args: unknown[]) {
      const body = String(args.at(-1) ?? '');
      if (body.startsWith('return function (')) compiled.push(body.slice(0, 120));
      return Reflect.construct(target, args) as object;
    },
  });
  try {
    return { value: await fn(), compiled };
  } finally {
    globalThis.Function = RealFunction;
  }
}

describe('boot validation', () => {
  it('checks settings and every builtin without compiling a zod fast path', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-boot-validation-'));
    const builtins = await builtinPlugins();
    const settings = {
      providers: { claude_code: { apiKey: 'k', baseUrl: 'http://127.0.0.1:9' } },
      runtime: { maxRounds: 7, persistIntervalMs: 100 },
      permissions: { default: 'ask', rules: [{ tool: 'Bash', pattern: 'git *', action: 'allow' }] },
      memory: { enabled: false },
    };
    const { value: kernel, compiled } = await countCompiled(() => createKernel({ home, builtins, settings, thirdParty: false }));
    try {
      expect(kernel.loaded.length).toBeGreaterThan(20);
      expect(compiled).toEqual([]);
    } finally {
      await kernel.shutdown();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('the probe sees zod compiling when a schema is parsed without the option', async () => {
    const { z } = await import('zod');
    const schema = z.object({ probeField: z.string(), other: z.number() });
    const { compiled } = await countCompiled(async () => schema.safeParse({ probeField: 'x', other: 1 }));
    expect(compiled.length).toBe(1);
  });
});

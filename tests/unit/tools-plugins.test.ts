import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Settings } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { builtinToolPlugins } from '../../hosts/builtins.js';

const kernels: Kernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

async function boot(settings: Settings = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-toolplugins-'));
  homes.push(home);
  const kernel = await createKernel({ home, plugins: builtinToolPlugins, settings, thirdParty: false });
  kernels.push(kernel);
  return kernel;
}

describe('builtin tool plugins', () => {
  it('register the seven tools through registerTool, each from its own plugin', async () => {
    expect(builtinToolPlugins.map((p) => p.name)).toEqual(['tool-read', 'tool-write', 'tool-edit', 'tool-delete', 'tool-bash', 'tool-managed-process', 'tool-image']);
    const kernel = await boot();
    expect(kernel.failures).toEqual([]);
    const tools = kernel.runtime.tools();
    expect(tools.map((t) => t.name).sort()).toEqual(['Bash', 'Delete', 'Edit', 'Image', 'ManagedProcess', 'Read', 'Write']);
    const parallel = tools.filter((t) => t.concurrency === 'parallel').map((t) => t.name).sort();
    expect(parallel).toEqual(['Image', 'Read']);
    for (const t of tools) expect(t.description.length).toBeGreaterThan(100);
  });

  it('use the parameter names of the external contract', async () => {
    const kernel = await boot();
    const props = (name: string) => {
      const t = kernel.runtime.tools().find((x) => x.name === name)!;
      const schema = z.toJSONSchema(t.parameters as z.ZodType, { io: 'input' }) as { properties: Record<string, unknown> };
      return Object.keys(schema.properties).sort();
    };
    expect(props('Read')).toEqual(['file_path', 'limit', 'offset']);
    expect(props('Write')).toEqual(['content', 'file_path']);
    expect(props('Edit')).toEqual(['file_path', 'new_string', 'old_string', 'replace_all']);
    expect(props('Delete')).toEqual(['path', 'recursive']);
    expect(props('Bash')).toEqual(['command', 'description', 'timeout']);
    expect(props('Image')).toEqual(['file_path']);
    expect(props('ManagedProcess')).toEqual(['action', 'command', 'id', 'lines', 'name']);
  });

  it('a bad tools settings value fails only the plugin that owns it, naming the field', async () => {
    const kernel = await boot({ tools: { bash: { defaultTimeoutMs: -5 }, read: { maxLines: 10 } } });
    expect(kernel.failures).toHaveLength(1);
    expect(kernel.failures[0]!.message).toContain('tools.bash.defaultTimeoutMs');
    expect(kernel.runtime.tools().map((t) => t.name)).not.toContain('Bash');
    expect(kernel.runtime.tools().map((t) => t.name)).toContain('Read');
    const typo = await boot({ tools: { managedProcess: { stopGrace: 5 } } });
    expect(typo.failures[0]!.message).toContain('tools.managedProcess');
    expect(typo.failures[0]!.message).toContain('stopGrace');
  });
});

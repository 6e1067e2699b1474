/**
 * The settings store validates every save against each plugin's schema, and a section the save
 * changes against the plugin's stricter `settingsWriteSchema` (MCP's server entries).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Plugin } from '../../plugin-api.js';
import { createKernel } from '../../core/kernel.js';
import mcp from '../../plugins/mcp/index.js';
import { trackResources } from '../helpers/cleanup.js';

const res = trackResources();

// Lenient at boot (any list of names), strict on a save that changes it (no empty names).
const lenient: Plugin = {
  name: 'lenient',
  settingsKey: 'lenient',
  settingsSchema: z.object({ names: z.array(z.string()) }).strict(),
  settingsWriteSchema: z.object({ names: z.array(z.string().min(1, 'must not be empty')) }),
  apply() {},
};

async function boot(onDisk: Record<string, unknown>, plugins: Plugin[]) {
  const home = res.tmp('h21c-settings-');
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify(onDisk));
  const kernel = await createKernel({ home, plugins, thirdParty: false });
  res.kernels.push(kernel);
  return kernel;
}

describe('settings write validation', () => {
  it('a save is checked against the plugin schema, and the write schema only where it changes the section', async () => {
    // A value the write schema refuses is tolerated at boot.
    const kernel = await boot({ lenient: { names: [''] } }, [lenient]);
    const store = kernel.settings;
    // Another section changes: the stored bad value does not block the save.
    await expect(store.update({ defaultMode: 'text' })).resolves.toMatchObject({ defaultMode: 'text' });
    await expect(store.update({ lenient: { names: ['a', ''] } } as never)).rejects.toThrow('settings: lenient.names.1: must not be empty');
    await expect(store.update({ lenient: { names: ['a'], extra: 1 } } as never)).rejects.toThrow('settings: lenient: Unrecognized key: "extra"');
    await expect(store.update({ lenient: { names: ['a'] } } as never)).resolves.toMatchObject({ lenient: { names: ['a'] } });
  });

  it('MCP: a save writing a bad server entry is refused naming the server and field; one already on disk is not', async () => {
    const kernel = await boot({ mcpServers: { old: { command: '' } } }, [mcp]);
    const store = kernel.settings;
    await expect(store.update({ defaultMode: 'text' })).resolves.toMatchObject({ defaultMode: 'text' });
    const servers = { ...(store.get().mcpServers as object), oops: { command: 'x', args: 'no' } };
    await expect(store.update({ mcpServers: servers } as never)).rejects.toThrow(/^settings: mcpServers\.old\.command: must not be empty$/);
    await expect(store.update({ mcpServers: { oops: { command: 'x', args: 'no' } } } as never)).rejects.toThrow(/^settings: mcpServers\.oops\.args: /);
    await expect(store.update({ mcpServers: { fine: { command: 'x' } } } as never)).resolves.toMatchObject({ mcpServers: { fine: { command: 'x' } } });
  });
});

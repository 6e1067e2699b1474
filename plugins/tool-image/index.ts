/**
 * Image: load an image file as image content, for the model (the bytes) and the preview (the
 * path). Sandboxed like Read.
 */
import { promises as fsp } from 'node:fs';
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { loadImage } from '../tool-shared/image.js';
import { describeFsError, guarded, ToolFailure } from '../tool-shared/results.js';
import { resolveSandboxPath } from '../tool-shared/sandbox.js';
import { sectionSchema, toolSettings } from '../tool-shared/settings.js';
import { description } from './description.js';

export const ImageArgsSchema = z.object({
  file_path: z.string().min(1).describe('The image file: absolute, or relative to the workspace.'),
});
export type ImageArgs = z.output<typeof ImageArgsSchema>;

async function loadImageFile(args: ImageArgs, ctx: ToolContext): Promise<ToolResult> {
  const { maxBytes } = toolSettings(ctx.settings, 'image');
  const p = await resolveSandboxPath(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'read' });
  const stat = await fsp.stat(p.absolute).catch((err) => {
    throw new ToolFailure(describeFsError(err, p.display));
  });
  if (!stat.isFile()) throw new ToolFailure(`${p.display} is not a file.`);
  const img = await loadImage(p, maxBytes, undefined);
  return { content: img.content, details: img.details };
}

export function createImageTool(): ToolDefinition<ImageArgs> {
  return { name: 'Image', description, parameters: ImageArgsSchema, concurrency: 'parallel', execute: guarded(loadImageFile) };
}

export default definePlugin({
  name: 'tool-image',
  settingsKey: 'tools',
  settingsSchema: sectionSchema('image'),
  apply(ctx) {
    ctx.registerTool(createImageTool());
  },
});

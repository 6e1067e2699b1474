/**
 * Image: load an image file as image content, for the model (the bytes) and the preview (the
 * path). Sandboxed like Read: the bytes come from the handle the sandbox walker opened and
 * checked, and are validated as an image before they reach the model.
 */
import { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolResult } from '../../plugin-api.js';
import { definePlugin } from '../../core/define-plugin.js';
import { FileIo } from '../../lib/tool-shared/abort.js';
import { loadImage } from '../../lib/tool-shared/image.js';
import { describeFsError, guarded, ToolFailure } from '../../lib/tool-shared/results.js';
import { resolveSandboxTarget } from '../../lib/tool-shared/sandbox.js';
import { SandboxEntry } from '../../lib/tool-shared/sandbox-fs.js';
import { sectionSchema, toolSettings } from '../../lib/tool-shared/settings.js';
import { description } from './description.js';

export const ImageArgsSchema = z.object({
  file_path: z.string().min(1).describe('The image file: absolute, or relative to the workspace.'),
});
export type ImageArgs = z.output<typeof ImageArgsSchema>;

async function loadImageFile(args: ImageArgs, ctx: ToolContext): Promise<ToolResult> {
  const { maxBytes } = toolSettings(ctx.settings, 'image');
  const { target: p, scope } = await resolveSandboxTarget(args.file_path, { workdir: ctx.workdir, uploads: ctx.paths?.uploads, access: 'read' });
  const io = new FileIo(ctx.signal, `loading ${p.display}`);
  return io.run(
    SandboxEntry.use(p, scope, io, { followLast: true }, async (entry) => {
      const { fh, stat } = await entry.openRead(`${p.display} is a folder, not an image file.`);
      try {
        const img = await loadImage(p, fh, stat.size, maxBytes, io);
        return { content: img.content, details: img.details };
      } finally {
        await fh.close().catch(() => {});
      }
    }).catch((err: unknown) => {
      if (err instanceof ToolFailure) throw err;
      throw new ToolFailure(describeFsError(err, p.display));
    }),
  );
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

/** A tool plugin for kernel tests: `Echo { text }` answers `echo:<text>`. */
import { z } from 'zod';
import type { Plugin } from '../../plugin-api.js';

export const echoToolPlugin: Plugin = {
  name: 'tool-echo',
  apply(ctx) {
    ctx.registerTool({
      name: 'Echo',
      description: 'Echo text back',
      parameters: z.object({ text: z.string() }),
      async execute(args: { text: string }) {
        return { content: [{ type: 'text', text: `echo:${args.text}` }] };
      },
    });
  },
};

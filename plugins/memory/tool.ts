/**
 * The `Memory` tool: Anthropic's memory-tool commands (view, create, str_replace, insert,
 * delete, rename) with its parameter names, which models are trained on, over the store.
 *
 * The arguments are one flat object (`command` plus the fields of each command) rather than a
 * union, because providers want a plain object schema at the top; which fields a command needs
 * is checked here, each missing one named in the error the model gets back.
 */
import { z } from 'zod';
import type { ToolDefinition, ToolResult } from '../../plugin-api.js';
import { guarded, textResult } from '../../lib/tool-shared/results.js';
import type { MemoryStore } from './store.js';

const COMMANDS = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'] as const;

/** The fields each command needs. */
const NEEDS: Record<(typeof COMMANDS)[number], string[]> = {
  view: ['path'],
  create: ['path', 'file_text'],
  str_replace: ['path', 'old_str', 'new_str'],
  insert: ['path', 'insert_line', 'insert_text'],
  delete: ['path'],
  rename: ['old_path', 'new_path'],
};

export const MemoryArgsSchema = z
  .object({
    command: z.enum(COMMANDS).describe('What to do: view, create, str_replace, insert, delete or rename.'),
    path: z.string().min(1).optional().describe('The memory file or folder, e.g. /memories/preferences.md or /memories/project/conventions.md (all commands but rename).'),
    // An array of two rather than a tuple: `prefixItems` is not in every provider's schema dialect.
    view_range: z
      .array(z.number().int().min(-1))
      .length(2, 'must be [first line, last line]')
      .optional()
      .describe('view of a file: [first line, last line], 1-based; last -1 reads to the end.'),
    file_text: z.string().optional().describe('create: the whole content of the new file.'),
    old_str: z.string().optional().describe('str_replace: the exact text to replace; it must occur exactly once.'),
    new_str: z.string().optional().describe('str_replace: the text to put in its place (may be empty).'),
    insert_line: z.number().int().optional().describe('insert: the line after which to insert (0 inserts at the top).'),
    insert_text: z.string().optional().describe('insert: the text to insert.'),
    old_path: z.string().min(1).optional().describe('rename: the file or folder to move.'),
    new_path: z.string().min(1).optional().describe('rename: where it goes (must not exist yet).'),
  })
  .superRefine((args, ctx) => {
    for (const field of NEEDS[args.command]) {
      if ((args as Record<string, unknown>)[field] === undefined) {
        ctx.addIssue({ code: 'custom', path: [field], message: `${args.command} needs ${field}` });
      }
    }
  });

export type MemoryArgs = z.output<typeof MemoryArgsSchema>;

export const MEMORY_TOOL_DESCRIPTION = `Your long-term memory across conversations: a folder of small Markdown files.
/memories/... is the user's memory (every project); /memories/project/... is the memory of the project in the current working folder.

Commands (Anthropic memory-tool parameters):
- view {path, view_range?}: list a folder (2 levels) or show a file with line numbers.
- create {path, file_text}: a new file (refused if it exists: edit it instead).
- str_replace {path, old_str, new_str}: replace text that occurs exactly once.
- insert {path, insert_line, insert_text}: insert after line insert_line (0 = top).
- delete {path}: a file or a folder.
- rename {old_path, new_path}: move or rename (the destination must not exist).

Keep one topic per file with a descriptive name (e.g. preferences.md, project/conventions.md) and a meaningful first line: the system prompt lists each file's name and first line. Store durable facts (preferences, decisions, conventions), not passing task details, and never secrets (keys, passwords, tokens). Fix or delete memories that turn out wrong or outdated. Paths never leave /memories: ".." and symbolic links are refused.`;

export function memoryTool(store: MemoryStore): ToolDefinition<MemoryArgs> {
  return {
    name: 'Memory',
    description: MEMORY_TOOL_DESCRIPTION,
    parameters: MemoryArgsSchema,
    concurrency: 'exclusive',
    promptRules: ['Memory: check /memories before relying on what you remember; save durable facts the user will want remembered, never secrets.'],
    execute: guarded(async (args, ctx): Promise<ToolResult> => {
      const wd = ctx.workdir;
      switch (args.command) {
        case 'view':
          return textResult(await store.view(args.path!, args.view_range as [number, number] | undefined, wd));
        case 'create':
          return textResult(await store.create(args.path!, args.file_text!, wd), { details: { path: args.path! } });
        case 'str_replace':
          return textResult(await store.strReplace(args.path!, args.old_str!, args.new_str!, wd), { details: { path: args.path! } });
        case 'insert':
          return textResult(await store.insert(args.path!, args.insert_line!, args.insert_text!, wd), { details: { path: args.path! } });
        case 'delete':
          return textResult(await store.delete(args.path!, wd), { details: { path: args.path! } });
        case 'rename':
          return textResult(await store.rename(args.old_path!, args.new_path!, wd), { details: { path: args.new_path!, from: args.old_path! } });
      }
    }),
  };
}

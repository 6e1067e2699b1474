/**
 * Flag parsing for the `liveagent` CLI. Strict: an unknown flag, a missing value or a bad mode is
 * a usage error (exit 2) with a one-line reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';

export class CliUsageError extends Error {}

export const USAGE = `Usage:
  liveagent chat [--mode text|tools|agent-dev] [--provider ID] [--model M] [--workdir DIR]
                 [--conversation ID] [--json] [--attach FILE]... PROMPT
  liveagent chat --conversation ID --regenerate [--mode M] [--provider ID] [--model M] [--json]
  liveagent compact --conversation ID [--json]
  liveagent conversations [--json] [--search TEXT] [--limit N]
  liveagent cron add --schedule EXPR (--prompt TEXT | --bash CMD | --http URL) [--name N] [--tz TZ]
                 [--conversation ID] [--missed skip|once] [--mode M] [--provider P] [--json] ...
  liveagent cron list [--json] | cron rm ID | cron runs ID [--json] | cron enable|disable ID
  liveagent serve [--port N] [--host H]
  liveagent desktop
  liveagent help [COMMAND] | --version`;

const ChatFlags = z.object({
  mode: z.enum(['text', 'tools', 'agent-dev'], { error: () => 'mode must be text, tools or agent-dev' }).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  workdir: z.string().min(1).optional(),
  conversation: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'conversation id must be 1-128 letters, digits, _ or -').optional(),
  json: z.boolean().optional(),
  attach: z.array(z.string().min(1, '--attach needs a FILE')).optional(),
  regenerate: z.boolean().optional(),
});
/** `prompt` may be empty with `--attach` (an attachment-only message) or `--regenerate`. */
export type ChatArgs = z.infer<typeof ChatFlags> & { prompt: string };

export function strictParse(argv: string[], options: NonNullable<ParseArgsConfig['options']>) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    // node's messages are multi-line with hints; keep the first line.
    throw new CliUsageError(String((err as Error).message).split('\n')[0]!.replace(/\. To specify a positional.*$/, ''));
  }
}

export function parseChatArgs(argv: string[]): ChatArgs {
  const { values, positionals } = strictParse(argv, {
    mode: { type: 'string' },
    provider: { type: 'string' },
    model: { type: 'string' },
    workdir: { type: 'string' },
    conversation: { type: 'string' },
    json: { type: 'boolean' },
    attach: { type: 'string', multiple: true },
    regenerate: { type: 'boolean' },
  });
  const r = ChatFlags.safeParse(values);
  if (!r.success) throw new CliUsageError(r.error.issues[0]!.message);
  const prompt = positionals.join(' ').trim();
  if (r.data.regenerate) {
    if (!r.data.conversation) throw new CliUsageError('--regenerate needs --conversation ID (the conversation whose last message is resent)');
    if (prompt || r.data.attach?.length) throw new CliUsageError('--regenerate resends the last message as it was: give no PROMPT and no --attach');
  } else if (!prompt && !r.data.attach?.length) throw new CliUsageError('a PROMPT is required: liveagent chat "your question" (or --attach FILE)');
  return { ...r.data, prompt };
}

/**
 * The absolute workdir, checked before anything runs: a tool run in a folder that does not exist
 * would fail only after the model spent a turn, and the CLI would still exit 0.
 */
export function checkWorkdir(dir: string): string {
  const abs = path.resolve(dir);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliUsageError(`--workdir ${dir}: ${code === 'ENOENT' ? 'no such folder' : code === 'EACCES' ? 'permission denied' : (err as Error).message}`);
  }
  if (!stat.isDirectory()) throw new CliUsageError(`--workdir ${dir}: not a folder`);
  return abs;
}

/** True when the arguments ask for JSON output, even if they do not parse (errors are JSON then too). */
export function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--json' || a.startsWith('--json='));
}

const ConversationId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'conversation id must be 1-128 letters, digits, _ or -');

export interface CompactArgs {
  conversation: string;
  json?: boolean;
}

export function parseCompactArgs(argv: string[]): CompactArgs {
  const { values, positionals } = strictParse(argv, { conversation: { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
  if (values.conversation === undefined) throw new CliUsageError('--conversation ID is required: liveagent compact --conversation c_…');
  const id = ConversationId.safeParse(values.conversation);
  if (!id.success) throw new CliUsageError(id.error.issues[0]!.message);
  return { conversation: id.data, ...(values.json ? { json: true } : {}) };
}

export interface ConversationsArgs {
  json?: boolean;
  search?: string;
  /** 1-500, default 50. */
  limit: number;
}

export function parseConversationsArgs(argv: string[]): ConversationsArgs {
  const { values, positionals } = strictParse(argv, { json: { type: 'boolean' }, search: { type: 'string' }, limit: { type: 'string' } });
  if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
  const search = (values.search as string | undefined)?.trim();
  if (values.search !== undefined && !search) throw new CliUsageError('--search needs a non-empty TEXT');
  if (search && search.length > 200) throw new CliUsageError('--search TEXT must be at most 200 characters');
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new CliUsageError(`--limit must be a number from 1 to 500, got "${values.limit}"`);
  return { limit, ...(values.json ? { json: true } : {}), ...(search ? { search } : {}) };
}

export function parseServeArgs(argv: string[]): { port: number; host: string } {
  const { values, positionals } = strictParse(argv, { port: { type: 'string' }, host: { type: 'string' } });
  if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
  const port = values.port === undefined ? 7420 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliUsageError(`--port must be a number from 0 to 65535, got "${values.port}"`);
  const host = (values.host as string | undefined) ?? '127.0.0.1';
  return { port, host };
}

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
                 [--conversation ID] [--json] PROMPT
  liveagent compact --conversation ID [--json]
  liveagent serve [--port N] [--host H]
  liveagent desktop
  liveagent --help | --version`;

const ChatFlags = z.object({
  mode: z.enum(['text', 'tools', 'agent-dev'], { error: () => 'mode must be text, tools or agent-dev' }).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  workdir: z.string().min(1).optional(),
  conversation: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'conversation id must be 1-128 letters, digits, _ or -').optional(),
  json: z.boolean().optional(),
});
export type ChatArgs = z.infer<typeof ChatFlags> & { prompt: string };

function strictParse(argv: string[], options: NonNullable<ParseArgsConfig['options']>) {
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
  });
  const r = ChatFlags.safeParse(values);
  if (!r.success) throw new CliUsageError(r.error.issues[0]!.message);
  const prompt = positionals.join(' ').trim();
  if (!prompt) throw new CliUsageError('a PROMPT is required: liveagent chat "your question"');
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

export function parseServeArgs(argv: string[]): { port: number; host: string } {
  const { values, positionals } = strictParse(argv, { port: { type: 'string' }, host: { type: 'string' } });
  if (positionals.length) throw new CliUsageError(`unexpected argument "${positionals[0]}"`);
  const port = values.port === undefined ? 7420 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliUsageError(`--port must be a number from 0 to 65535, got "${values.port}"`);
  const host = (values.host as string | undefined) ?? '127.0.0.1';
  return { port, host };
}

/**
 * The working folder of runs started through the gateway. A server is often started from
 * wherever its user happened to be (a home folder, a repository), so a run the WebUI starts
 * without a folder works in a dedicated `<home>/workspace` (created on first use), never in the
 * server's current folder. A folder the user names is checked here: it must exist and be a
 * folder, and the error says which it is not. (The CLI keeps the current folder: it runs where
 * its user is.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ReplyError } from './chat-runs.js';
import type { ExtensionMessage } from '../../lib/gateway-protocol/protocol.js';

/** The folder runs without a chosen one work in. */
export function defaultWorkdir(home: string): string {
  return path.join(home, 'workspace');
}

const WorkdirPath = z.string().trim().min(1, 'workdir: must not be empty').max(4096, 'workdir: must be at most 4096 characters').refine((p) => !p.includes('\0'), 'workdir: must not contain a NUL character');

/**
 * The absolute folder a run works in: `requested` when given (relative paths are taken from the
 * home folder of the user, `~` expanded), checked to be an existing folder; otherwise the
 * default workspace, created when missing. A relative path is refused: relative to what the
 * server's folder happens to be is exactly the surprise this avoids (`~/` is the user's home).
 * Throws a ReplyError (`bad_request`) naming the path.
 */
export function resolveWorkdir(requested: string | undefined, home: string): string {
  // Synchronous on purpose: a queued message's run must start in the same tick as its turn comes
  // (ChatRuns.pump attaches the next item to it), and a stat or mkdir of one folder is quick.
  if (requested === undefined) {
    const dir = defaultWorkdir(home);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }
  const r = WorkdirPath.safeParse(requested);
  if (!r.success) throw new ReplyError('bad_request', r.error.issues[0]!.message);
  const p = expand(r.data);
  if (!p) throw new ReplyError('bad_request', `workdir ${r.data}: must be an absolute path (or start with ~/)`);
  let stat;
  try {
    stat = fs.statSync(p);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ReplyError('bad_request', `workdir ${p}: no such folder`);
    if (code === 'EACCES' || code === 'EPERM') throw new ReplyError('bad_request', `workdir ${p}: permission denied`);
    throw new ReplyError('bad_request', `workdir ${p}: ${(err as Error).message}`);
  }
  if (!stat.isDirectory()) throw new ReplyError('bad_request', `workdir ${p}: not a folder`);
  return p;
}

/** The absolute path, `~` expanded; undefined for a relative one. */
function expand(p: string): string | undefined {
  const userHome = process.env.HOME ?? process.env.USERPROFILE ?? '';
  if (userHome && (p === '~' || p.startsWith('~/'))) return path.join(userHome, p.slice(1));
  return path.isAbsolute(p) ? path.normalize(p) : undefined;
}

const CheckSchema = z.object({ type: z.literal('workdir.check'), id: z.string().optional(), path: z.string().max(4096).optional() });

/**
 * `workdir.check { path? }`: `{ path, isDefault }`, the folder a run would use (the default
 * workspace without `path`, created then), or the refusal a send would get.
 */
export function workdirCheckHandler(home: () => string) {
  return async (message: ExtensionMessage): Promise<{ path: string; isDefault: boolean }> => {
    const r = CheckSchema.safeParse(message);
    if (!r.success) throw new ReplyError('bad_request', `${r.error.issues[0]!.path.join('.') || 'message'}: ${r.error.issues[0]!.message}`);
    const requested = r.data.path?.trim() ? r.data.path : undefined;
    return { path: resolveWorkdir(requested, home()), isDefault: requested === undefined };
  };
}

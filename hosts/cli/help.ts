/**
 * `liveagent help [COMMAND]` and `liveagent --version`. The help lists every command and flag
 * with the exit codes (an external contract, see exit-codes.ts); `args.ts`'s USAGE stays the
 * short synopsis printed with a usage error. tests/integration/packaging-cli.test.ts checks that
 * every flag the parsers accept is named here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliUsageError } from './args.js';

const COMMON = `Environment:
  LIVEAGENT_HOME      data folder (settings.json, conversations, plugins/); default ~/.liveagent
  LIVEAGENT_LOG       log level on stderr: debug, info, warn (default), error
  LIVEAGENT_DATABASE_URL  postgres://… : history, settings and cron tasks on PostgreSQL (a team
                      server, docs/team-server.md); settings history.url overrides it
  ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY (and *_BASE_URL): provider credentials;
                      $LIVEAGENT_HOME/settings.json overrides them (docs/settings.md)

Exit codes:
  0    success
  1    the run or command failed (e.g. a provider error, Electron not installed)
  2    bad usage: an unknown command or flag, a missing or bad value, a bad setting
  130  stopped by Ctrl-C (SIGINT); 143 SIGTERM, 129 SIGHUP (128 + the signal's number)`;

export const COMMANDS: Record<string, string> = {
  chat: `liveagent chat [flags] PROMPT
  Send PROMPT (the remaining words) and stream the reply to stdout; the conversation id goes to stderr.
  --mode text|tools|agent-dev   what the model may do: answer only, use tools (default), or tools and the debug log
  --provider ID                 the provider (anthropic, openai, gemini, claude_code, a plugin's id)
  --model M                     the model (default: the provider's default)
  --workdir DIR                 the folder tools work in (default: the current folder)
  --conversation ID             continue a stored conversation (c_…)
  --attach FILE                 attach a file (repeatable; PROMPT may then be empty)
  --regenerate                  with --conversation and no PROMPT: resend the last message for a new reply
  --json                        one JSON object per lifecycle event on stdout; answers to questions and
                                tool approvals are read as JSON lines on stdin`,
  compact: `liveagent compact --conversation ID [--json]
  Compact a stored conversation now (compaction also runs on its own when a conversation grows long).
  --conversation ID   the conversation (required)
  --json              the result as one JSON line`,
  conversations: `liveagent conversations [--json] [--search TEXT] [--limit N]
  List stored conversations, newest first.
  --search TEXT   only conversations matching TEXT (at most 200 characters)
  --limit N       at most N (1-500, default 50)
  --json          one JSON object per conversation`,
  cron: `liveagent cron add|list|rm|runs|enable|disable ...
  Scheduled tasks (docs/cron.md); they run while \`liveagent serve\` runs.
  cron add --schedule EXPR (--prompt TEXT | --bash CMD | --http URL) [flags]
    --schedule EXPR          a 5- or 6-field cron expression, or an ISO time (runs once)
    --prompt TEXT            run a chat turn; with --mode M, --provider P, --model M, --workdir DIR,
                             --conversation ID (append to that conversation)
    --bash CMD               run a shell command (in --workdir DIR)
    --http URL               send a request: --method M, --header 'Name: value' (repeatable), --body TEXT
    --name N                 a name to show in lists
    --tz TZ                  the schedule's IANA time zone (default: the machine's)
    --missed skip|once       after downtime: skip the missed runs (default) or run once
    --overlap skip|allow     while the previous run is still going: skip (default) or run anyway
    --max-runs N             stop after N runs
    --timeout MS             stop a run after MS milliseconds
    --disabled               add it paused
    --json                   the task as one JSON line
  cron list [--json]         every task (alias: ls)
  cron rm ID                 delete a task (alias: remove)
  cron runs ID [--limit N] [--json]   a task's recent runs
  cron enable ID | cron disable ID`,
  serve: `liveagent serve [--port N] [--host H]
  Run the server host: the WebUI and the gateway, on the embedded SQLite store (or on PostgreSQL
  with LIVEAGENT_DATABASE_URL: several serve processes then share it as one team,
  docs/team-server.md). Prints the URL (with its access token) to open in a browser.
  --port N   the port (0-65535, default 7420; 0 picks a free one)
  --host H   the address to listen on (default 127.0.0.1)`,
  desktop: `liveagent desktop
  Open the desktop app (Electron). Where Electron's binary is not installed it says so in one line
  and exits 1 (docs/desktop.md); $LIVEAGENT_ELECTRON names a binary to use.`,
  help: `liveagent help [COMMAND]
  This text, or one command's part of it (also: --help, -h).`,
  version: `liveagent --version
  The installed version (also: -v).`,
};

export function helpText(command?: string): string {
  if (command !== undefined) {
    const name = command === '--version' || command === '-v' ? 'version' : command;
    const text = COMMANDS[name];
    if (!text) throw new CliUsageError(`no help for "${command}" (commands: ${Object.keys(COMMANDS).join(', ')})`);
    return `${text}\n\n${COMMON}`;
  }
  return [`LiveAgent ${version()}: an agent chat runtime (CLI, server with WebUI, desktop)`, 'Commands:', ...Object.values(COMMANDS), COMMON].join('\n\n');
}

/** The version in the package.json above this file (dist/hosts/cli/ or dist/hosts/cli-bundle/). */
export function version(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'liveagent' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* keep climbing */
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

/** The model-facing description and rules of ManagedProcess. */
export const description = `Runs long-running commands in the background (dev servers, watchers, builds that take long) and manages them.

- action "start": run \`command\` with bash in the workspace folder. Give it a short \`name\` to find it again. Returns its id (e.g. "p1") and, if it ends at once, its exit code and output.
- action "list": the processes started, running or ended, with their status.
- action "tail": the last \`lines\` lines (default 50) of the output of process \`id\` (or \`name\`).
- action "stop": stop process \`id\` (or \`name\`) and everything it started.
- Processes keep running between your turns until you stop them; stop the ones you no longer need. All are stopped when the app shuts down.
- Standard input is closed. Output is kept up to a limit; tail shows the newest part.
- For short commands that finish on their own, use Bash.
- Never use ManagedProcess to delete files or folders: use the Delete tool.`;

export const promptRules = [
  'Start servers, watchers and other long-running commands with ManagedProcess, not with Bash and `&`; stop them with ManagedProcess when they are no longer needed.',
];

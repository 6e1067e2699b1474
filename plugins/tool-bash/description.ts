/** The model-facing description of Bash. */
export const description = `Runs a shell command with bash in the workspace folder and returns its output (stdout and stderr together) and its exit code.

- command: the command to run. Each call starts a new shell: cd, variables and functions do not carry over to the next call. Quote paths that contain spaces.
- timeout: milliseconds before the command is stopped (default 120000, at most 600000). On timeout the command and every process it started are stopped.
- description: a short note (5-10 words) of what the command does, shown to the user.
- Output is capped: a long output keeps its beginning and its end, with a marker where the middle was left out. Filter or redirect big outputs (e.g. \`| tail -n 50\`, \`> build.log\`).
- Standard input is closed, so commands cannot prompt: use non-interactive flags (e.g. \`-y\`, \`--no-pager\`).
- Processes a command leaves running in the background are stopped when it ends. Start servers, watchers and other long-running commands with ManagedProcess instead.
- Never delete files or folders with Bash (rm, rmdir, unlink, git rm, find -delete, ...): use the Delete tool.
- To read, create or change files, prefer Read, Write and Edit to cat, sed, echo > file and the like.`;

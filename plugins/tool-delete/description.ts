/** The model-facing description and rules of Delete. */
export const description = `Deletes a file or a folder. This is the only way to delete: never delete with Bash, ManagedProcess, scripts or deleting commands (rm, rmdir, unlink, git rm, find -delete, ...).

- path: what to delete, absolute or relative to the workspace. Only paths inside the workspace (or an enabled skill folder) can be deleted; the workspace itself cannot.
- recursive: must be true to delete a folder that is not empty, with everything in it. An empty folder or a file needs no flag.
- A symbolic link is deleted itself; what it points to is left alone.
- The result lists what was removed.
- To stage a deletion of a file tracked by git, call Delete first, then run \`git add -u -- <exact workspace-relative path>\` with Bash.`;

export const promptRules = [
  'Delete files and folders only with the Delete tool, never with Bash, ManagedProcess, scripts or deleting CLIs.',
  'To stage a tracked deletion, call Delete first, then run `git add -u -- <exact workspace-relative path>`.',
];

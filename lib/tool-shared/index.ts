/**
 * Helpers third-party file tools may reuse (the sandbox, process groups, tool settings). A
 * library, not a plugin: the builtin tool list lives in hosts/builtins.ts.
 *
 * The tool plugins import the files of this folder directly, never this index.
 */
export { resolveSandboxPath, isInside, type Access, type SandboxOptions, type SandboxPath } from './sandbox.js';
export { groupAlive, killGroup, spawnShell } from './process-group.js';
export { toolSettings } from './settings.js';

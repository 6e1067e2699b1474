/**
 * The builtin tools, for hosts to load, plus the helpers third-party file tools may reuse (the
 * sandbox, process groups). Each tool is its own plugin and registers through `registerTool`
 * exactly as a third-party tool would.
 *
 * The tool plugins import the files of this folder directly, never this index, so loading a
 * single tool plugin does not load the others.
 */
import type { Plugin } from '../../plugin-api.js';
import toolBash from '../tool-bash/index.js';
import toolDelete from '../tool-delete/index.js';
import toolEdit from '../tool-edit/index.js';
import toolImage from '../tool-image/index.js';
import toolManagedProcess from '../tool-managed-process/index.js';
import toolRead from '../tool-read/index.js';
import toolWrite from '../tool-write/index.js';

/** Read, Write, Edit, Delete, Bash, ManagedProcess, Image. */
export const builtinToolPlugins: Plugin[] = [toolRead, toolWrite, toolEdit, toolDelete, toolBash, toolManagedProcess, toolImage];

export { resolveSandboxPath, isInside, type Access, type SandboxOptions, type SandboxPath } from './sandbox.js';
export { groupAlive, killGroup, spawnShell } from './process-group.js';
export { toolSettings } from './settings.js';

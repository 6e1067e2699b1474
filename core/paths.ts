import os from 'node:os';
import path from 'node:path';
import type { RuntimePaths } from '../plugin-api.js';

/** `$LIVEAGENT_HOME`, default `~/.liveagent`, and the fixed places inside it. */
export function resolvePaths(home = process.env.LIVEAGENT_HOME || path.join(os.homedir(), '.liveagent')): RuntimePaths {
  const abs = path.resolve(home);
  return {
    home: abs,
    settingsFile: path.join(abs, 'settings.json'),
    uploads: path.join(abs, 'uploads'),
    plugins: path.join(abs, 'plugins'),
  };
}

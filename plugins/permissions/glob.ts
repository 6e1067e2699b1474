/**
 * picomatch, loaded on first use (a policy with rules), typed here: it ships no types, and an
 * ambient `declare module` would clash with another plugin's own view of the package.
 */
import { createRequire } from 'node:module';

export interface GlobOptions {
  /** Single stars match slashes too (bash's rules). */
  bash?: boolean;
  dot?: boolean;
  nocase?: boolean;
}

interface Picomatch {
  (glob: string, options?: GlobOptions): (input: string) => boolean;
  makeRe(glob: string, options?: GlobOptions): RegExp;
}

let loaded: Picomatch | undefined;
function picomatch(): Picomatch {
  return (loaded ??= createRequire(import.meta.url)('picomatch') as Picomatch);
}

export function globMatcher(glob: string, options: GlobOptions): (input: string) => boolean {
  return picomatch()(glob, options);
}

/** Whether `glob` compiles (picomatch throws on a few malformed ones). */
export function isValidGlob(glob: string): boolean {
  try {
    picomatch().makeRe(glob, { bash: true });
    return true;
  } catch {
    return false;
  }
}

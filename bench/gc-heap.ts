/**
 * The heap after a full collection, for retained-memory figures (bench rows and the leak test).
 * gc is exposed at run time, so no node flag is needed.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;

export function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

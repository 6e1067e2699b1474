/**
 * The heap after a full collection, for retained-memory figures (bench rows and the leak test).
 * gc is exposed at run time, so no node flag is needed.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;

/**
 * Used heap after a full collection, without the code spaces: V8 keeps compiling and
 * re-optimizing hot functions for a while, which moves code size by hundreds of KB between two
 * measurements and says nothing about data a run keeps.
 */
export function heapAfterGc(): number {
  gc();
  gc();
  let used = 0;
  for (const s of v8.getHeapSpaceStatistics()) if (!s.space_name.startsWith('code')) used += s.space_used_size;
  return used;
}

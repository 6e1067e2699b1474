import type { EventBase, LifecycleEvent } from '../plugin-api.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A lifecycle event before the kernel stamps conversation, run, seq and time on it. */
export type EventInput = DistributiveOmit<LifecycleEvent, keyof EventBase>;

export type EmitFn = (event: EventInput) => void;

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

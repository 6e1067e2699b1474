/**
 * The life of a history backend's connection, the same for every backend: opened once, in the
 * background (every hook and service call awaits the same opening), calls in flight tracked so
 * that shutdown waits for them, then closed once. After close, new calls are refused.
 */
export interface StoreLifecycle<T> {
  open(): Promise<T>;
  /** Run `op` as a call the close waits for; refused once closing. */
  track<R>(op: () => Promise<R>): Promise<R>;
  close(): Promise<void>;
}

export function storeLifecycle<T>(connect: () => Promise<T>, disconnect: (opened: T) => Promise<void> | void): StoreLifecycle<T> {
  let opened: Promise<T> | undefined;
  let closing: Promise<void> | undefined;
  const pending = new Set<Promise<unknown>>();
  const closed = () => new Error('the history database is closed');
  return {
    open: () => (opened ??= closing ? Promise.reject(closed()) : connect()),
    track<R>(op: () => Promise<R>): Promise<R> {
      if (closing) return Promise.reject(closed());
      const p = op();
      pending.add(p);
      const forget = () => void pending.delete(p);
      p.then(forget, forget);
      return p;
    },
    close: () =>
      (closing ??= (async () => {
        if (!opened) return;
        const o = await opened.then(
          (value) => ({ value }),
          () => undefined,
        );
        if (!o) return;
        await Promise.allSettled([...pending]);
        await disconnect(o.value);
      })()),
  };
}

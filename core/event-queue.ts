/**
 * A run's event log as an async iterable. The producer only appends, never waits, so a slow
 * reader can never slow the run; each iterator keeps its own cursor into the log.
 */
export class EventLog<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private closed = false;
  private waiters: Array<() => void> = [];

  /** A log that keeps nothing (its owner publishes events elsewhere); iterating it is a mistake. */
  constructor(private readonly keep = true) {}

  push(item: T): void {
    if (this.closed || !this.keep) return;
    this.items.push(item);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake() {
    if (this.waiters.length === 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  /**
   * A hand-written iterator rather than an async generator: when events are already waiting,
   * `next()` returns a resolved promise at once, which saves the generator's extra promise
   * hops on every streamed delta.
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (!this.keep) throw new Error('this run keeps no event log (it was started with keepEvents: false); use runtime.onEvent');
    let i = 0;
    const next = (): Promise<IteratorResult<T>> => {
      if (i < this.items.length) return Promise.resolve({ value: this.items[i++]!, done: false });
      if (this.closed) return Promise.resolve({ value: undefined, done: true });
      return new Promise<void>((r) => this.waiters.push(r)).then(next);
    };
    return {
      next,
      return: () => {
        i = Number.POSITIVE_INFINITY;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/**
 * A run's event log as an async iterable. The producer only appends, never waits, so a slow
 * reader can never slow the run; each iterator keeps its own cursor into the log.
 */
export class EventLog<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private closed = false;
  private waiters: Array<() => void> = [];

  push(item: T): void {
    if (this.closed) return;
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

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let i = 0;
    for (;;) {
      while (i < this.items.length) yield this.items[i++]!;
      if (this.closed) return;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

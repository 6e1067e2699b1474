/**
 * Abort for file-tool I/O. A tool's whole body is raced against the run's signal, so a stuck
 * operation (a hung network mount, say) cannot hold the tool past the abort: the tool returns
 * at once and the body finishes in the background, cleaning up after itself (closing handles,
 * removing its temp file). Inside the body the signal is checked between steps and between
 * chunks, so the abandoned work stops at the next step.
 *
 * Single steps are not raced one by one on purpose: the sandbox names entries through
 * `/proc/self/fd/<dirfd>/...`, and a step that outlived its directory handle could meet the
 * descriptor number reused by another file.
 */
import { ToolFailure } from './results.js';

export class FileIo {
  /**
   * @param what how the message names the work, e.g. "writing notes.txt".
   * @param unchanged appended to the abort message, e.g. "notes.txt was not changed".
   */
  constructor(
    readonly signal: AbortSignal | undefined,
    private readonly what: string,
    private readonly unchanged?: string,
  ) {}

  aborted(): ToolFailure {
    return new ToolFailure(`Stopped: the run was aborted while ${this.what}${this.unchanged ? `; ${this.unchanged}` : ''}.`, { aborted: true });
  }

  check(): void {
    if (this.signal?.aborted) throw this.aborted();
  }

  /** `op`, unless the signal aborts first; a result that arrives after the abort goes to `dispose`. */
  run<T>(op: Promise<T>, dispose?: (value: T) => unknown): Promise<T> {
    return abortable(op, this.signal, () => this.aborted(), dispose);
  }
}

export function abortable<T>(op: Promise<T>, signal: AbortSignal | undefined, reason: () => Error, dispose?: (value: T) => unknown): Promise<T> {
  if (!signal) return op;
  const late = (value: T) => {
    if (dispose) Promise.resolve().then(() => dispose(value)).catch(() => {});
  };
  if (signal.aborted) {
    op.then(late, () => {});
    return Promise.reject(reason());
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      if (settled) return;
      settled = true;
      op.then(late, () => {});
      reject(reason());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    op.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        reject(err);
      },
    );
  });
}

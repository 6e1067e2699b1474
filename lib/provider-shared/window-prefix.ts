/**
 * Work done on a window's messages, carried from one request to the next. A tool loop sends the
 * same message objects every round plus the new round's, so a pass over the whole window (to
 * convert it, or to find its media) grows with the loop unless it resumes where it stopped.
 * Progress is keyed by the window's first message and checked by identity: a window whose prefix
 * differs (truncated, compacted, a pruned result: new objects) starts over, and an entry goes
 * with its first message.
 */
import type { Message } from '../../plugin-api.js';

interface Progress<S> {
  key: string;
  consumed: Message[];
  state: S;
}

export class WindowPrefix<S> {
  private readonly byFirst = new WeakMap<Message, Progress<S>>();

  /**
   * @param fresh the state of an empty window, for `key`
   * @param step folds one message (at `index`) into the state
   */
  constructor(private readonly fresh: (key: string) => S, private readonly step: (state: S, message: Message, index: number, key: string) => void) {}

  /**
   * The state after `messages[0, end)`, folding only the messages not seen before. `key` tells
   * apart passes that fold differently (a provider id): another key starts over.
   */
  advance(messages: readonly Message[], end = messages.length, key = ''): S {
    const first = messages[0];
    if (!first || end === 0) return this.fresh(key);
    let p = this.byFirst.get(first);
    if (!p || p.key !== key || !continues(p.consumed, messages, end)) {
      p = { key, consumed: [], state: this.fresh(key) };
      this.byFirst.set(first, p);
    }
    for (let i = p.consumed.length; i < end; i++) {
      this.step(p.state, messages[i]!, i, key);
      p.consumed.push(messages[i]!);
    }
    return p.state;
  }
}

/** The first `consumed.length` of `messages` (within `end`) are exactly those: pointer compares, newest first. */
function continues(consumed: Message[], messages: readonly Message[], end: number): boolean {
  if (consumed.length > end) return false;
  for (let i = consumed.length - 1; i >= 0; i--) if (consumed[i] !== messages[i]) return false;
  return true;
}

/** Small helpers for reading streams in tests. */
import type { ProviderEvent } from '../../plugin-api.js';

/** Every item of an async iterable, in order. */
export async function collectAll<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The text of all text deltas (what a user saw stream by). */
export function streamedText(events: ProviderEvent[]): string {
  return events.map((e) => (e.type === 'text_delta' ? e.text : '')).join('');
}

/** The errors a provider stream reported. */
export function errorsOf(events: ProviderEvent[]) {
  return events.flatMap((e) => (e.type === 'error' ? [e.error] : []));
}

/**
 * What a hook receives: the lifecycle event as JSON (the fields of `LifecycleEvent` in
 * plugin-api.d.ts), plus `workdir`. Image and document bytes are left out (`dataOmitted` says
 * how many base64 characters were there): a hook gets the shape, not megabytes of base64.
 *
 * `message_update` events that wait in a conversation's queue are coalesced: consecutive
 * updates of the same message become one event whose `deltas` list the pieces in order, with
 * consecutive text (or thinking, or tool-input JSON) of the same block concatenated into one
 * piece. So a streamed text reaches a slow hook as one delta holding all the text it missed,
 * never as the latest state only. `coalesced` counts the updates merged, `firstSeq` is the seq
 * of the first one (`seq`/`ts` are the last one's), and `delta` is kept when there is exactly
 * one piece (the usual case), so a hook written for single updates still reads it.
 */
import type { LifecycleEvent, MessageDelta } from '../../plugin-api.js';

type Piece = { kind: 'text' | 'thinking' | 'tool_input'; index: number; chunks: string[] } | { kind: 'other'; delta: MessageDelta };

/** The deltas of consecutive message_update events, merged as they arrive (cheap: an array push). */
export class MergedDeltas {
  private pieces: Piece[] = [];
  count = 0;
  readonly firstSeq: number;

  constructor(first: Extract<LifecycleEvent, { type: 'message_update' }>) {
    this.firstSeq = first.seq;
    this.add(first.delta);
  }

  add(delta: MessageDelta): void {
    this.count++;
    const last = this.pieces[this.pieces.length - 1];
    if (delta.kind === 'text' || delta.kind === 'thinking' || delta.kind === 'tool_input') {
      const text = delta.kind === 'tool_input' ? delta.json : delta.text;
      if (last && last.kind === delta.kind && last.index === delta.index) last.chunks.push(text);
      else this.pieces.push({ kind: delta.kind, index: delta.index, chunks: [text] });
      return;
    }
    this.pieces.push({ kind: 'other', delta });
  }

  deltas(): MessageDelta[] {
    return this.pieces.map((p) => {
      if (p.kind === 'other') return p.delta;
      const joined = p.chunks.join('');
      return p.kind === 'tool_input' ? { kind: 'tool_input', index: p.index, json: joined } : { kind: p.kind, index: p.index, text: joined };
    });
  }
}

/** The JSON a hook receives for an event (merged deltas for a coalesced message_update). */
export function hookInput(event: LifecycleEvent, workdir: string, merged?: MergedDeltas): Record<string, unknown> {
  if (event.type === 'message_update' && merged) {
    const deltas = merged.deltas();
    const { delta: _last, ...rest } = event;
    return { ...rest, ...(deltas.length === 1 ? { delta: deltas[0] } : {}), deltas, coalesced: merged.count, firstSeq: merged.firstSeq, workdir };
  }
  return { ...event, workdir };
}

/** Blocks whose `data` is base64 bytes (images, documents). */
const BYTES = new Set(['image', 'document']);

/** Serialize for a hook: image and document bytes become their size. */
export function serialize(input: unknown): string {
  return JSON.stringify(input, (_key, value) => {
    if (value && typeof value === 'object' && BYTES.has((value as { type?: string }).type ?? '') && typeof (value as { data?: unknown }).data === 'string') {
      const { data, ...rest } = value as { data: string };
      return { ...rest, dataOmitted: data.length };
    }
    return value;
  });
}

/**
 * The one message-delta fold (core/message-fold.ts), as the kernel, the gateway and the WebUI
 * read it: the same deltas give the same blocks, each consumer choosing how unfinished ones read.
 */
import { describe, expect, it } from 'vitest';
import type { MessageDelta } from '../../plugin-api.js';
import { MessageFold } from '../../core/define-plugin.js';
import { MessageAssembler } from '../../core/message-assembler.js';
import { applyEvent, emptyState } from '../../webui/src/lib/conversation-state.js';

const deltas: MessageDelta[] = [
  { kind: 'thinking', index: 0, text: 'hm' },
  { kind: 'thinking', index: 0, text: 'm' },
  { kind: 'block', index: 0, block: { type: 'thinking', thinking: 'hmm', signature: 's' } },
  { kind: 'text', index: 1, text: 'Hel' },
  { kind: 'text', index: 1, text: 'lo' },
  { kind: 'tool_call_start', index: 3, id: 't1', name: 'Read' },
  { kind: 'tool_input', index: 3, json: '{"path":' },
  { kind: 'tool_input', index: 3, json: '"a"}' },
];

describe('MessageFold', () => {
  it('folds deltas by block index; unfinished tool calls parse or drop; gaps are skipped', () => {
    const fold = new MessageFold();
    for (const d of deltas) fold.apply(d);
    expect(fold.unfinished()).toBe(true);
    expect(fold.toolName(3)).toBe('Read');
    expect(fold.toolInput(3)).toBe('{"path":"a"}');
    expect(fold.content()).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: 's' },
      { type: 'text', text: 'Hello' },
      { type: 'tool_call', id: 't1', name: 'Read', input: { path: 'a' } },
    ]);
    expect(fold.content({ toolCalls: 'drop' })).toHaveLength(2);
    fold.apply({ kind: 'block', index: 3, block: { type: 'tool_call', id: 't1', name: 'Read', input: { path: 'a' } } });
    fold.apply({ kind: 'block', index: 1, block: { type: 'text', text: 'Hello' } });
    expect(fold.unfinished()).toBe(false);
  });

  it('unfinished thinking: stamped and dropped while empty for the kernel, kept as is otherwise', () => {
    const fold = new MessageFold();
    fold.apply({ kind: 'thinking', index: 0, text: '' });
    fold.apply({ kind: 'thinking', index: 1, text: 'idea' });
    expect(fold.content({ thinkingProvider: 'p' })).toEqual([{ type: 'thinking', thinking: 'idea', provider: 'p' }]);
    expect(fold.content()).toEqual([{ type: 'thinking', thinking: '' }, { type: 'thinking', thinking: 'idea' }]);
  });

  it('continues from content already shown (a snapshot partial)', () => {
    const fold = MessageFold.from([{ type: 'text', text: 'Hel' }, { type: 'tool_call', id: 't', name: 'Bash', input: {} }]);
    fold.apply({ kind: 'text', index: 0, text: 'lo' });
    fold.apply({ kind: 'tool_input', index: 1, json: '{}' });
    expect(fold.block(0)).toEqual({ type: 'text', text: 'Hello' });
    expect(fold.toolInput(1)).toBe('{}');
  });

  it('the kernel, the gateway-style read and the WebUI state agree on the same stream', () => {
    const asm = new MessageAssembler('m1', 'p', 'model', 1);
    asm.apply({ type: 'block_start', index: 0, block: { type: 'text' } });
    asm.apply({ type: 'text_delta', index: 0, text: 'Hel' });
    asm.apply({ type: 'text_delta', index: 0, text: 'lo' });
    asm.apply({ type: 'block_start', index: 1, block: { type: 'tool_call', id: 't1', name: 'Read' } });
    asm.apply({ type: 'tool_input_delta', index: 1, json: '{"a":1}' });
    expect(asm.hasOutput).toBe(true);
    expect(asm.toolNameAt(1)).toBe('Read');
    // The kernel leaves the unfinished call out and marks the message partial.
    expect(asm.snapshot(false)).toMatchObject({ content: [{ type: 'text', text: 'Hello' }], meta: { partial: true } });

    const s = emptyState('c1');
    const base = { conversationId: 'c1', runId: 'r1', ts: 1 };
    let seq = 0;
    applyEvent(s, { ...base, seq: ++seq, type: 'message_start', messageId: 'm1' } as never);
    const stream: MessageDelta[] = [
      { kind: 'text', index: 0, text: 'Hel' },
      { kind: 'text', index: 0, text: 'lo' },
      { kind: 'tool_call_start', index: 2, id: 't1', name: 'Read' },
      { kind: 'tool_input', index: 2, json: '{"a":1}' },
    ];
    for (const delta of stream) applyEvent(s, { ...base, seq: ++seq, type: 'message_update', messageId: 'm1', delta } as never);
    expect(s.live?.content).toEqual([{ type: 'text', text: 'Hello' }, { type: 'text', text: '' }, { type: 'tool_call', id: 't1', name: 'Read', input: {} }]);
    expect(s.liveArgs).toEqual({ 2: '{"a":1}' });
    applyEvent(s, { ...base, seq: ++seq, type: 'message_update', messageId: 'm1', delta: { kind: 'block', index: 2, block: { type: 'tool_call', id: 't1', name: 'Read', input: { a: 1 } } } } as never);
    expect(s.live?.content[2]).toEqual({ type: 'tool_call', id: 't1', name: 'Read', input: { a: 1 } });
    expect(s.liveArgs).toEqual({});
  });
});

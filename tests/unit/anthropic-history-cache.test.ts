/**
 * The Anthropic conversion caches each message's blocks: converting the same history again
 * (the next round of a tool loop) gives the same wire messages, and merging turns never leaks
 * into the cache.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../plugin-api.js';
import { toAnthropicMessages } from '../../plugins/provider-anthropic/history.js';

let n = 0;
const msg = (role: Message['role'], content: Message['content']): Message => ({ id: `m${++n}`, role, content, createdAt: n, provider: 'claude_code' });

describe('anthropic history conversion cache', () => {
  it('gives the same wire messages every round, with merged turns left out of the cache', () => {
    const history: Message[] = [
      msg('user', [{ type: 'text', text: 'hi' }]),
      msg('assistant', [{ type: 'text', text: 'part one' }]),
      // Two assistant messages in a row are merged into one wire turn.
      msg('assistant', [{ type: 'tool_call', id: 'toolu_1', name: 'Read', input: { file_path: 'a' } }]),
      msg('tool', [{ type: 'tool_result', toolCallId: 'toolu_1', toolName: 'Read', content: [{ type: 'text', text: 'contents' }], isError: false }]),
      msg('user', [{ type: 'text', text: 'and?' }]),
    ];
    const first = structuredClone(toAnthropicMessages(history, 'claude_code'));
    expect(first.map((m) => [m.role, m.content.map((b) => b.type)])).toEqual([
      ['user', ['text']],
      ['assistant', ['text', 'tool_use']],
      ['user', ['tool_result', 'text']],
    ]);
    for (let round = 0; round < 3; round++) expect(toAnthropicMessages(history, 'claude_code')).toEqual(first);
    // Another provider id converts anew (thinking and searches depend on it).
    const thinking = msg('assistant', [{ type: 'thinking', thinking: 'hmm', signature: 'sig', provider: 'claude_code' }, { type: 'text', text: 'ok' }]);
    expect(toAnthropicMessages([history[0]!, thinking], 'claude_code')[1]!.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(toAnthropicMessages([history[0]!, thinking], 'other')[1]!.content.map((b) => b.type)).toEqual(['text']);
  });
});

/**
 * The Anthropic conversion caches each message's blocks and where the last conversion of a
 * window stopped: converting the same history again (the next round of a tool loop) gives the
 * same wire messages as a fresh conversion, merging turns and synthetic results never leak into
 * what is kept, and neither do one request's cache breakpoints.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../plugin-api.js';
import { toAnthropicMessages } from '../../plugins/provider-anthropic/history.js';
import { buildAnthropicRequest } from '../../plugins/provider-anthropic/request.js';

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

  it('a growing window is converted where the last round stopped, and equals a fresh conversion every round', () => {
    const window: Message[] = [msg('user', [{ type: 'text', text: 'go' }])];
    const fresh = (ms: Message[]) => toAnthropicMessages(structuredClone(ms), 'claude_code');
    for (let r = 0; r < 30; r++) {
      // Every third round the call is still unanswered when the request is built (a synthetic
      // result fills in), then answered: the synthetic result must not stay behind.
      window.push(msg('assistant', [{ type: 'text', text: `round ${r}` }, { type: 'tool_call', id: `toolu_${r}`, name: 'Noop', input: {} }]));
      if (r % 3 === 0) expect(toAnthropicMessages(window, 'claude_code')).toEqual(fresh(window));
      window.push(msg('tool', [{ type: 'tool_result', toolCallId: `toolu_${r}`, toolName: 'Noop', content: [{ type: 'text', text: 'ok' }], isError: false }]));
      if (r % 5 === 0) window.push(msg('user', [{ type: 'text', text: `steer ${r}` }]));
      expect(toAnthropicMessages(window, 'claude_code')).toEqual(fresh(window));
    }
    // A window whose prefix changed (truncated, then a different message) starts over.
    const cut = window.slice(0, 7);
    cut.push(msg('user', [{ type: 'text', text: 'instead' }]));
    expect(toAnthropicMessages(cut, 'claude_code')).toEqual(fresh(cut));
    // A trailing partial assistant turn is left out, then taken once complete.
    const partial = msg('assistant', [{ type: 'text', text: 'half' }]);
    partial.meta = { partial: true };
    expect(toAnthropicMessages([...window, partial], 'claude_code')).toEqual(fresh(window));
    expect(toAnthropicMessages([...window, msg('assistant', [{ type: 'text', text: 'whole' }])], 'claude_code').at(-1)!.content).toEqual([{ type: 'text', text: 'whole' }]);
  });

  it('cache breakpoints of one request never stay on the kept conversion: every round has at most four', () => {
    const window: Message[] = [msg('user', [{ type: 'text', text: 'go' }])];
    const cfg = { cache: true } as unknown as Parameters<typeof buildAnthropicRequest>[1];
    for (let r = 0; r < 12; r++) {
      window.push(msg('assistant', [{ type: 'tool_call', id: `toolu_${r}`, name: 'Noop', input: {} }]));
      window.push(msg('tool', [{ type: 'tool_result', toolCallId: `toolu_${r}`, toolName: 'Noop', content: [{ type: 'text', text: 'ok' }], isError: false }]));
      const body = buildAnthropicRequest({ model: 'claude-sonnet-4-6', system: [{ text: 'sys' }], messages: window, tools: [] } as never, cfg, 'claude_code', undefined);
      const marks = JSON.stringify(body).split('cache_control').length - 1;
      expect(marks).toBeLessThanOrEqual(4);
      expect(JSON.stringify(body.messages).split('cache_control').length - 1).toBe(2);
    }
  });
});

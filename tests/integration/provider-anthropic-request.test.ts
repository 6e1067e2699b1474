/**
 * What the claude_code provider sends: the request body as the mock records it. System prompt,
 * cache-control breakpoints, tools and tool_choice, thinking budget, native web search, and the
 * history conversion (tool results, images, signatures, redacted thinking, hosted search, ids).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ContentBlock, Message, ProviderEvent, ProviderRequest, SystemPart, ToolSpec } from '../../plugin-api.js';
import { MessageAssembler } from '../../core/message-assembler.js';
import { normalizeToolCallId } from '../../lib/provider-shared/history.js';
import { INTERRUPTED_TOOL_RESULT } from '../../plugins/provider-anthropic/history.js';
import type { AnthropicProviderOptions } from '../../plugins/provider-anthropic/index.js';
import { anthropicReply, loadAnthropicFixture } from '../fixtures/mock-anthropic.js';
import { closeMocks, collect, errorsOf, mock, msg, providerFor, request, userText } from './provider-anthropic-harness.js';

afterEach(closeMocks);

/** Send one request and return the body the server received. */
async function bodyOf(req: Partial<ProviderRequest>, opts: AnthropicProviderOptions = {}): Promise<any> {
  const s = await mock();
  const out = await collect(providerFor(s, opts), request(req));
  expect(errorsOf(out)).toEqual([]);
  return s.requests[0]!.body;
}

/** Every cache_control marker in a body, as paths. */
function breakpoints(body: any): string[] {
  const found: string[] = [];
  const walk = (v: any, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') {
      if (v.cache_control) found.push(path);
      for (const [k, x] of Object.entries(v)) if (k !== 'cache_control') walk(x, path ? `${path}.${k}` : k);
    }
  };
  walk(body, '');
  return found;
}

const tool = (name: string): ToolSpec => ({ name, description: `The ${name} tool`, inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } });
const assistant = (content: ContentBlock[], extra: Partial<Message> = {}) => msg('assistant', content, { provider: 'claude_code', model: 'claude-sonnet-4-6', stopReason: 'end', ...extra });

/** Stream a reply and assemble the assistant message the kernel would store. */
async function replyMessage(events: ReturnType<typeof anthropicReply>, opts: AnthropicProviderOptions = {}): Promise<Message> {
  const s = await mock(() => events);
  const asm = new MessageAssembler('a1', 'claude_code', 'claude-sonnet-4-6');
  const out: ProviderEvent[] = await collect(providerFor(s, opts));
  for (const ev of out) asm.apply(ev);
  return asm.snapshot(false);
}

describe('system prompt and basics', () => {
  it('sends model, max_tokens, stream and one system block per non-empty part', async () => {
    const body = await bodyOf({ system: [{ id: 'base', text: 'Base.' }, { id: 'empty', text: '  ' }, { id: 'user-settings', text: 'Be brief.' }] });
    expect(body).toMatchObject({ model: 'claude-sonnet-4-6', stream: true, max_tokens: 16384 });
    expect(body.system.map((b: any) => b.text)).toEqual(['Base.', 'Be brief.']);
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hello', cache_control: { type: 'ephemeral' } }] }]);
    expect(body.thinking).toBeUndefined();
    expect(body.tools).toBeUndefined();
  });

  it('maxOutputTokens from the request, else settings; never above the model limit', async () => {
    expect((await bodyOf({ maxOutputTokens: 1234 })).max_tokens).toBe(1234);
    expect((await bodyOf({}, { maxOutputTokens: 2222 })).max_tokens).toBe(2222);
    expect((await bodyOf({ model: 'claude-haiku-4-5', maxOutputTokens: 500_000 })).max_tokens).toBe(64_000);
  });
});

describe('cache control', () => {
  it('marks the last tool, the last system block and the last two user turns: 4 breakpoints', async () => {
    const body = await bodyOf({
      tools: [tool('a'), tool('b')],
      messages: [userText('one'), assistant([{ type: 'text', text: 'r1' }]), userText('two'), assistant([{ type: 'text', text: 'r2' }]), userText('three')],
    });
    expect(breakpoints(body).sort()).toEqual(['messages[2].content[0]', 'messages[4].content[0]', 'system[0]', 'tools[1]'].sort());
  });

  it('marked system parts get the breakpoints instead of the last block, within the limit of 4', async () => {
    const parts: SystemPart[] = ['a', 'b', 'c', 'd', 'e'].map((t) => ({ id: t, text: t, cache: t !== 'e' }));
    const one = await bodyOf({ system: parts.slice(0, 2).concat({ id: 'x', text: 'x' }), messages: [userText('u')] });
    expect(breakpoints(one).filter((p) => p.startsWith('system'))).toEqual(['system[0]', 'system[1]']);
    const many = await bodyOf({ system: parts, tools: [tool('a')], messages: [userText('u1'), assistant([{ type: 'text', text: 'r' }]), userText('u2')] });
    const marks = breakpoints(many);
    expect(marks).toHaveLength(4);
    // Two turns and a tool leave one for the system prompt: the last marked part (the longest cached prefix).
    expect(marks.filter((p) => p.startsWith('system'))).toEqual(['system[3]']);
  });

  it('the last block of a user turn is marked, including a tool_result', async () => {
    const body = await bodyOf({
      tools: [tool('a')],
      messages: [userText('go'), assistant([{ type: 'tool_call', id: 't1', name: 'a', input: { q: 'x' } }]), msg('tool', [{ type: 'tool_result', toolCallId: 't1', toolName: 'a', content: [{ type: 'text', text: 'ok' }], isError: false }])],
    });
    expect(body.messages[2].content[0]).toMatchObject({ type: 'tool_result', cache_control: { type: 'ephemeral' } });
    expect(body.messages[0].content[0].cache_control).toEqual({ type: 'ephemeral' });
  });

  it('cache: false sends no breakpoint at all', async () => {
    const body = await bodyOf({ tools: [tool('a')] }, { cache: false });
    expect(breakpoints(body)).toEqual([]);
  });
});

describe('tools and tool_choice', () => {
  it('sends tools with their input schema', async () => {
    const body = await bodyOf({ tools: [tool('lookup'), { name: 'bare', description: 'no type', inputSchema: { properties: {} } }] });
    expect(body.tools[0]).toEqual({ name: 'lookup', description: 'The lookup tool', input_schema: tool('lookup').inputSchema });
    expect(body.tools[1].input_schema).toEqual({ type: 'object', properties: {} });
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['any', { type: 'any' }],
    ['none', { type: 'none' }],
    [{ name: 'lookup' }, { type: 'tool', name: 'lookup' }],
    [{ type: 'tool', name: 'lookup' }, { type: 'tool', name: 'lookup' }],
  ] as const)('toolChoice %j → %j', async (choice, expected) => {
    const body = await bodyOf({ tools: [tool('lookup')], toolChoice: choice as ProviderRequest['toolChoice'] });
    expect(body.tool_choice).toEqual(expected);
  });

  it('no tool_choice without tools; forced choice becomes auto on models that refuse it', async () => {
    expect((await bodyOf({ toolChoice: 'any' })).tool_choice).toBeUndefined();
    expect((await bodyOf({ model: 'claude-sonnet-5-5', tools: [tool('a')], toolChoice: 'any' })).tool_choice).toEqual({ type: 'auto' });
  });
});

describe('thinking', () => {
  it('a budget enables thinking with max_tokens above it', async () => {
    const body = await bodyOf({ thinkingBudget: 8000, maxOutputTokens: 4000 });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 8000 });
    expect(body.max_tokens).toBeGreaterThan(8000);
    const roomy = await bodyOf({ thinkingBudget: 2048 });
    expect(roomy).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 16384 });
  });

  it('the budget comes from settings when the request has none, at least 1024', async () => {
    expect((await bodyOf({}, { thinkingBudget: 3000 })).thinking).toEqual({ type: 'enabled', budget_tokens: 3000 });
    expect((await bodyOf({ thinkingBudget: 100 })).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect((await bodyOf({ options: { thinkingBudget: 5000 } })).thinking).toEqual({ type: 'enabled', budget_tokens: 5000 });
  });

  it('a budget larger than the model limit is cut to leave room for the answer', async () => {
    const body = await bodyOf({ model: 'claude-haiku-4-5', thinkingBudget: 100_000 });
    expect(body.max_tokens).toBe(64_000);
    expect(body.thinking.budget_tokens).toBeLessThan(64_000);
  });

  it('adaptive models get {type: adaptive}; forced tool use turns thinking off', async () => {
    expect((await bodyOf({ model: 'claude-sonnet-5', thinkingBudget: 4000 })).thinking).toEqual({ type: 'adaptive' });
    expect((await bodyOf({ thinkingBudget: 4000, tools: [tool('a')], toolChoice: 'any' })).thinking).toBeUndefined();
  });

  it('thinking stays off while answering tool calls from a turn that did not start with thinking', async () => {
    const messages = [
      userText('go'),
      msg('assistant', [{ type: 'tool_call', id: 't1', name: 'a', input: {} }], { provider: 'codex' }),
      msg('tool', [{ type: 'tool_result', toolCallId: 't1', toolName: 'a', content: [{ type: 'text', text: 'ok' }], isError: false }]),
    ];
    expect((await bodyOf({ thinkingBudget: 4000, tools: [tool('a')], messages })).thinking).toBeUndefined();
    messages[1] = assistant([{ type: 'thinking', thinking: 'hm', signature: 'sig', provider: 'claude_code' }, { type: 'tool_call', id: 't1', name: 'a', input: {} }]);
    expect((await bodyOf({ thinkingBudget: 4000, tools: [tool('a')], messages })).thinking).toEqual({ type: 'enabled', budget_tokens: 4000 });
  });
});

describe('web search', () => {
  it('is offered as the native server tool when enabled', async () => {
    expect((await bodyOf({}, { webSearch: { maxUses: 3 } })).tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 3, cache_control: { type: 'ephemeral' } }]);
    const both = await bodyOf({ tools: [tool('a')] }, { webSearch: true, cache: false });
    expect(both.tools).toEqual([expect.objectContaining({ name: 'a' }), { type: 'web_search_20250305', name: 'web_search' }]);
    expect((await bodyOf({ tools: [tool('a')] })).tools).toHaveLength(1);
  });

  it('a searched reply travels back as its raw blocks, encrypted content unchanged', async () => {
    const reply = await replyMessage(loadAnthropicFixture('web-search') as never);
    const search = reply.content.find((b) => b.type === 'hosted_search')!;
    expect(search).toMatchObject({ queries: ['weather NYC today'], status: 'completed' });
    const body = await bodyOf({ messages: [userText('weather?'), reply, userText('thanks')] });
    const sent = body.messages[1].content;
    expect(sent.map((b: any) => b.type)).toEqual(['text', 'server_tool_use', 'web_search_tool_result', 'text', 'text']);
    expect(sent[1]).toEqual({ type: 'server_tool_use', id: 'srvtoolu_014hJH82Qum7Td6UV8gDXThB', name: 'web_search', input: { query: 'weather NYC today' } });
    expect(sent[2].content[0].encrypted_content).toBe('Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k...');
    // Another provider's search cannot be replayed here.
    const foreign = await bodyOf({ messages: [userText('weather?'), { ...reply, content: reply.content.map((b) => (b.type === 'hosted_search' ? { ...b, provider: 'gemini' } : b)) }, userText('thanks')] });
    expect(foreign.messages[1].content.map((b: any) => b.type)).toEqual(['text', 'text', 'text']);
  });
});

describe('history conversion', () => {
  it('tool results of a round become one user turn of tool_result blocks (text, error, image)', async () => {
    const body = await bodyOf({
      tools: [tool('a')],
      messages: [
        userText('go'),
        assistant([{ type: 'text', text: 'calling' }, { type: 'tool_call', id: 't1', name: 'a', input: { q: '1' } }, { type: 'tool_call', id: 't2', name: 'a', input: { q: '2' } }, { type: 'tool_call', id: 't3', name: 'a', input: { q: '3' } }], { stopReason: 'tool_use' }),
        msg('tool', [
          { type: 'tool_result', toolCallId: 't1', toolName: 'a', content: [{ type: 'text', text: 'line 1' }, { type: 'text', text: 'line 2' }], isError: false },
          { type: 'tool_result', toolCallId: 't2', toolName: 'a', content: [{ type: 'text', text: 'boom' }], isError: true, details: { secret: 'never sent' } },
          { type: 'tool_result', toolCallId: 't3', toolName: 'a', content: [{ type: 'text', text: 'a picture' }, { type: 'image', mimeType: 'image/png', data: 'iVBORw0' }], isError: false },
        ]),
      ],
    }, { cache: false });
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'calling' }, { type: 'tool_use', id: 't1', name: 'a', input: { q: '1' } }, { type: 'tool_use', id: 't2', name: 'a', input: { q: '2' } }, { type: 'tool_use', id: 't3', name: 'a', input: { q: '3' } }],
    });
    expect(body.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: 'line 1\nline 2' },
        { type: 'tool_result', tool_use_id: 't2', content: 'boom', is_error: true },
        { type: 'tool_result', tool_use_id: 't3', content: [{ type: 'text', text: 'a picture' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0' } }] },
      ],
    });
  });

  it('user images become base64 image blocks; dropped bytes leave a note', async () => {
    const body = await bodyOf({ messages: [msg('user', [{ type: 'text', text: 'look' }, { type: 'image', mimeType: 'image/jpeg', data: '/9j/4A' }, { type: 'image', mimeType: 'image/png', path: '/tmp/old.png' }])] }, { cache: false });
    expect(body.messages[0].content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4A' } },
      { type: 'text', text: '[image /tmp/old.png omitted from context]' },
    ]);
  });

  it('signed thinking goes back with its signature; redacted thinking with its data', async () => {
    const reply = await replyMessage(loadAnthropicFixture('redacted-thinking') as never);
    const body = await bodyOf({ messages: [userText('think'), reply, userText('more')] });
    expect(body.messages[1].content).toEqual([
      { type: 'thinking', thinking: 'Let me analyze this step by step...', signature: (reply.content[0] as any).signature },
      { type: 'redacted_thinking', data: (reply.content[1] as any).data },
      { type: 'text', text: 'Based on my analysis...' },
    ]);
  });

  it('thinking from another provider, and our own unsigned thinking, are dropped', async () => {
    const body = await bodyOf({
      messages: [
        userText('a'),
        assistant([{ type: 'thinking', thinking: 'gemini thoughts', provider: 'gemini', providerData: { sig: 'x' } }, { type: 'text', text: 'r1' }], { provider: 'gemini' }),
        userText('b'),
        assistant([{ type: 'thinking', thinking: 'cut short', provider: 'claude_code' }, { type: 'thinking', thinking: '', redacted: true, data: 'opaque', provider: 'codex' }, { type: 'text', text: 'r2' }]),
        userText('c'),
      ],
    }, { cache: false });
    expect(body.messages[1].content).toEqual([{ type: 'text', text: 'r1' }]);
    expect(body.messages[3].content).toEqual([{ type: 'text', text: 'r2' }]);
  });

  it('tool-call ids are normalized the same way in tool_use and tool_result', async () => {
    const odd = 'call:abc/123|x';
    const body = await bodyOf({
      tools: [tool('a')],
      messages: [userText('go'), assistant([{ type: 'tool_call', id: odd, name: 'a', input: {} }]), msg('tool', [{ type: 'tool_result', toolCallId: odd, toolName: 'a', content: [{ type: 'text', text: 'ok' }], isError: false }])],
    }, { cache: false });
    const id = normalizeToolCallId(odd);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(body.messages[1].content[0].id).toBe(id);
    expect(body.messages[2].content[0].tool_use_id).toBe(id);
  });

  it('merges consecutive same-role turns, drops orphan results and answers unanswered calls', async () => {
    const body = await bodyOf({
      tools: [tool('a')],
      messages: [
        msg('tool', [{ type: 'tool_result', toolCallId: 'ghost', toolName: 'a', content: [{ type: 'text', text: 'orphan' }], isError: false }]),
        userText('first'),
        userText('second'),
        assistant([{ type: 'text', text: 'r' }]),
        assistant([{ type: 'tool_call', id: 't9', name: 'a', input: {} }]),
        userText('never mind'),
      ],
    }, { cache: false });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'r' }, { type: 'tool_use', id: 't9', name: 'a', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't9', content: INTERRUPTED_TOOL_RESULT, is_error: true }, { type: 'text', text: 'never mind' }] },
    ]);
  });

  it('a trailing assistant turn cut short is not sent as a prefill', async () => {
    const body = await bodyOf({ messages: [userText('hi'), assistant([{ type: 'text', text: 'par' }], { stopReason: 'error', meta: { partial: true } })] }, { cache: false });
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });
});

describe('request options', () => {
  it('invalid request options give one config error naming the provider and the field', async () => {
    const s = await mock();
    const out = await collect(providerFor(s), request({ options: { thinkingBudget: 'lots' } }));
    const [err] = errorsOf(out);
    expect(err).toMatchObject({ code: 'config', retryable: false });
    expect(err!.message).toMatch(/claude_code.*thinkingBudget/);
    expect(s.requests).toHaveLength(0);
  });

  it('sends the key as a bearer token and no retry header beyond the first attempt', async () => {
    const s = await mock();
    await collect(providerFor(s));
    expect(s.requests[0]!.headers.authorization).toBe('Bearer sk-ant-test-key');
    expect(s.requests[0]!.headers['x-stainless-retry-count']).toBe('0');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import type { Plugin } from '../../plugin-api.js';
import { TestClient, coveredSeqs, boot, cleanup, contiguous, gate, sendTo, text } from './gateway-harness.js';

afterEach(cleanup);

describe('gateway streaming', () => {
  it('send → streamed token events → exactly one done, seq rising across runs', async () => {
    const b = await boot({ steps: [{ text: ['Hel', 'lo', ' there'] }, { text: 'again' }] });
    const c = await TestClient.connect(b);
    const sent = await c.ok<{ conversationId: string; runId: string }>(text('hi'));
    expect(sent.conversationId).toMatch(/^c_/);
    const done = await c.terminal(sent.conversationId);
    expect(done.type).toBe('done');
    expect(done.event.type === 'agent_end' && done.event.status).toBe('completed');
    const stream = c.stream(sent.conversationId);
    const tokens = stream.filter((m) => m.type === 'token' && m.event.type === 'message_update' && m.event.delta.kind === 'text');
    expect(tokens.map((m) => (m.event.type === 'message_update' && m.event.delta.kind === 'text' ? m.event.delta.text : ''))).toEqual(['Hel', 'lo', ' there']);
    expect(coveredSeqs(stream)).toEqual(coveredSeqs(stream).map((_, i) => i + 1));
    expect(stream.filter((m) => m.type === 'done' || m.type === 'error')).toHaveLength(1);
    expect(stream[0]!.event.type).toBe('agent_start');

    await c.ok(sendTo(sent.conversationId, 'more'));
    const done2 = await c.terminal(sent.conversationId, done.seq);
    const all = c.stream(sent.conversationId);
    expect(contiguous(coveredSeqs(all))).toBe(true);
    expect(done2.seq).toBe(all.at(-1)!.seq);
    expect(all.filter((m) => m.type === 'done')).toHaveLength(2);
    expect(c.invalid).toEqual([]);
  });

  it('a burst of deltas of one block within a tick goes out coalesced: fewer messages, the same text, every seq covered', async () => {
    const pieces = Array.from({ length: 500 }, (_, i) => `p${i} `);
    const burst: Plugin = {
      name: 'burst-provider',
      apply(ctx) {
        ctx.registerProvider({
          id: 'burst',
          displayName: 'Burst',
          defaultModel: 'b-1',
          isConfigured: () => true,
          async *stream() {
            yield { type: 'block_start', index: 0, block: { type: 'text' } };
            for (const p of pieces) yield { type: 'text_delta', index: 0, text: p };
            yield { type: 'block_end', index: 0, block: { type: 'text', text: pieces.join('') } };
            yield { type: 'done', stopReason: 'end' };
          },
        });
      },
    };
    const b = await boot({ extra: [burst] });
    const c = await TestClient.connect(b);
    const sent = await c.ok<{ conversationId: string }>({ type: 'chat_queue', item: { action: 'send', text: 'go', provider: 'burst', mode: 'text', clientRequestId: 'burst-1' } });
    await c.terminal(sent.conversationId);
    const stream = c.stream(sent.conversationId);
    const tokens = stream.filter((m) => m.type === 'token' && m.event.type === 'message_update' && m.event.delta.kind === 'text');
    expect(tokens.length).toBeLessThan(pieces.length);
    expect(tokens.some((m) => (m.coalesced ?? 1) > 1)).toBe(true);
    expect(tokens.map((m) => (m.event.type === 'message_update' && m.event.delta.kind === 'text' ? m.event.delta.text : '')).join('')).toBe(pieces.join(''));
    expect(tokens.reduce((n, m) => n + (m.coalesced ?? 1), 0)).toBe(pieces.length);
    expect(coveredSeqs(stream)).toEqual(coveredSeqs(stream).map((_, i) => i + 1));
    // The message's own seq and its event's are the last delta's.
    for (const m of tokens) expect(m.event.seq).toBe(m.seq);
    expect(c.invalid).toEqual([]);
  });

  it('projects thinking and tool events with their phase', async () => {
    const tool: Plugin = {
      name: 'tool-echo',
      apply: (ctx) =>
        void ctx.registerTool({
          name: 'Echo',
          description: 'echo',
          parameters: { safeParse: (v: unknown) => ({ success: true, data: v }) },
          jsonSchema: { type: 'object' },
          execute: async () => ({ content: [{ type: 'text', text: 'echoed' }] }),
        }),
    };
    const b = await boot({ steps: [{ thinking: 'hmm', toolCalls: [{ id: 't1', name: 'Echo', input: { a: 1 } }] }, { text: 'ok' }], extra: [tool] });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
    await c.terminal(conversationId);
    const kinds = c.stream(conversationId).map((m) => `${m.type}${m.phase ? `:${m.phase}` : ''}`);
    expect(kinds).toContain('thinking');
    expect(kinds.filter((k) => k.startsWith('tool:'))).toEqual(['tool:start', 'tool:end']);
  });

  it('stop mid-stream ends the run with one done whose status is aborted', async () => {
    const b = await boot({ steps: [{ hang: true, afterText: 'partial' }] });
    const c = await TestClient.connect(b);
    const { conversationId } = await c.ok<{ conversationId: string }>(text('go'));
    await c.waitFor((m) => m.type === 'token');
    const stop = await c.ok<{ stopped: boolean }>({ type: 'chat_queue', item: { action: 'stop', conversationId } });
    expect(stop.stopped).toBe(true);
    const end = await c.terminal(conversationId);
    expect(end.type).toBe('done');
    expect(end.event.type === 'agent_end' && end.event.status).toBe('aborted');
    await new Promise((r) => setTimeout(r, 50));
    expect(c.stream(conversationId).filter((m) => m.type === 'done' || m.type === 'error')).toHaveLength(1);
  });

  it('a send repeated with the same clientRequestId is not run twice', async () => {
    const g = gate(0);
    const b = await boot({ steps: [{ text: 'once' }, { text: 'twice' }], gates: [g] });
    const c = await TestClient.connect(b);
    const item = { action: 'send', text: 'hi', clientRequestId: 'same-id' };
    const first = await c.ok<{ conversationId: string; runId: string }>({ type: 'chat_queue', item });
    // Reconnect and repeat, as a client does when it did not see the reply.
    await c.close();
    const c2 = await TestClient.connect(b);
    const again = await c2.ok<{ conversationId: string; runId: string; duplicate: boolean }>({ type: 'chat_queue', item });
    expect(again).toMatchObject({ conversationId: first.conversationId, runId: first.runId, duplicate: true });
    // With the conversation id now known, still the same run.
    const third = await c2.ok<{ runId: string }>({ type: 'chat_queue', item: { ...item, conversationId: first.conversationId } });
    expect(third.runId).toBe(first.runId);
    g.release();
    await c2.terminal(first.conversationId);
    expect(b.provider.requests).toHaveLength(1);
  });

  it('attachments: images become image blocks, text files a text block with name and content', async () => {
    const b = await boot({ steps: [{ text: 'seen' }] });
    const c = await TestClient.connect(b);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64');
    const { conversationId } = await c.ok<{ conversationId: string }>({
      type: 'chat_queue',
      item: {
        action: 'send',
        text: 'look',
        clientRequestId: 'att-1',
        attachments: [
          { name: 'pic.png', mimeType: 'image/png', data: png, encoding: 'base64' },
          { name: 'notes.md', mimeType: 'text/markdown', data: Buffer.from('# Notes\nhello').toString('base64'), encoding: 'base64' },
          { name: 'data.csv', mimeType: 'text/csv', data: 'a,b\n1,2', encoding: 'utf8' },
        ],
      },
    });
    await c.terminal(conversationId);
    const user = b.provider.requests[0]!.messages.at(-1)!;
    expect(user.content[0]).toEqual({ type: 'text', text: 'look' });
    expect(user.content[1]).toEqual({ type: 'image', mimeType: 'image/png', data: png });
    expect(user.content[2]).toEqual({ type: 'text', text: '<file name="notes.md">\n# Notes\nhello\n</file>' });
    expect(user.content[3]!.type === 'text' && user.content[3]!.text).toContain('a,b\n1,2');
    const bad = await c.request({ type: 'chat_queue', item: { action: 'send', text: '', clientRequestId: 'att-2', attachments: [{ name: 'x.bin', mimeType: 'application/octet-stream', data: Buffer.from([0, 1, 2, 255]).toString('base64') }] } });
    expect(bad.ok === false && bad.error.message).toContain('x.bin');
  });

  it('bad messages get a reply naming the field; unknown conversations and providers are refused', async () => {
    const b = await boot({ steps: [{ text: 'x' }] });
    const c = await TestClient.connect(b);
    const r1 = await c.request({ type: 'chat_queue', item: { action: 'send', text: 'x' } });
    expect(r1.ok === false && r1.error.message).toContain('clientRequestId');
    const r2 = await c.request({ type: 'subscribe', conversationId: 'bad id!' });
    expect(r2.ok === false && r2.error.message).toContain('conversationId');
    c.send({ type: 'nope' });
    const r3 = await c.waitFor((m) => m.type === 'reply' && m.ok === false && m.id === '');
    expect(r3.type === 'reply' && !r3.ok && r3.error.code).toBe('bad_request');
    const r4 = await c.request(sendTo('c_unknown', 'x'));
    expect(r4.ok === false && r4.error).toMatchObject({ code: 'not_found' });
    const r5 = await c.request({ type: 'chat_queue', item: { action: 'send', text: 'x', clientRequestId: 'p', provider: 'nope' } });
    expect(r5.ok === false && r5.error.message).toContain('unknown provider "nope"');
  });

  it('tool_answer goes to the askUserQuestion service, or says clearly that there is none', async () => {
    const b = await boot();
    const c = await TestClient.connect(b);
    const answer = { type: 'chat_queue', item: { action: 'tool_answer', item_id: 'tc1', request_json: '[]', conversation_id: 'c_x' } };
    const none = await c.request(answer);
    expect(none.ok === false && none.error).toMatchObject({ code: 'unavailable' });
    expect(none.ok === false && none.error.message).toContain('askUserQuestion');

    const calls: unknown[] = [];
    const ask: Plugin = {
      name: 'fake-ask',
      apply: (ctx) =>
        void ctx.provide('askUserQuestion', {
          answer: async (a: { toolCallId: string }) => {
            calls.push(a);
            if (a.toolCallId === 'gone') throw new Error('no pending question "gone"');
          },
        }),
    };
    const b2 = await boot({ extra: [ask] });
    const c2 = await TestClient.connect(b2);
    expect((await c2.request(answer)).ok).toBe(true);
    expect(calls).toEqual([{ toolCallId: 'tc1', conversationId: 'c_x', requestJson: '[]' }]);
    const gone = await c2.request({ ...answer, item: { ...answer.item, item_id: 'gone' } });
    expect(gone.ok === false && gone.error.message).toBe('no pending question "gone"');
  });
});

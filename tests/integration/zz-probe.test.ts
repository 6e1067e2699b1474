import { test } from 'vitest';
import OpenAI from 'openai';
import { startMockOpenAI, chatCompletionReply, responsesReply } from '../fixtures/mock-openai.js';
test('probe', async () => {
  const s = await startMockOpenAI();
  const c = new OpenAI({ apiKey: s.apiKey, baseURL: s.url + '/v1', maxRetries: 0 });
  const ev = chatCompletionReply({ text: 'Hello there world', includeUsage: true });
  s.setScript(() => ({ kind: 'sse', events: ev, truncateAfterBytes: 500 }));
  try {
    const st = await c.chat.completions.create({ model: 'x', messages: [], stream: true });
    let n = 0; for await (const e of st) n++;
    console.log('truncate: ok', n);
  } catch (e: any) { console.log('truncate err', e?.constructor?.name, e?.message, e?.cause?.message, e?.cause?.code); }
  s.setScript(() => ({ kind: 'raw', body: 'data: {"a":1}\n\ndata: {"b":' }));
  const st2 = await c.chat.completions.create({ model: 'x', messages: [], stream: true });
  const got = []; for await (const e of st2) got.push(e); console.log('raw partial', JSON.stringify(got));
  s.setScript(() => ({ kind: 'raw', body: 'data: {"a":1}\n\ndata: {"b":2}\n' }));
  const st3 = await c.chat.completions.create({ model: 'x', messages: [], stream: true });
  const got3 = []; for await (const e of st3) got3.push(e); console.log('raw one newline', JSON.stringify(got3));
  s.setScript(() => ({ kind: 'raw', body: 'data: {"a":1}\n\ndata: {"b":2}' }));
  const st4 = await c.chat.completions.create({ model: 'x', messages: [], stream: true });
  const got4 = []; for await (const e of st4) got4.push(e); console.log('raw no newline', JSON.stringify(got4));
  for (const n of [50000]) {
    const { chatTextStream, responsesTextStream } = await import('../fixtures/mock-openai.js');
    let t = Date.now(); const evs = chatTextStream(n, { includeUsage: true }); console.log('build chat', Date.now() - t);
    s.setScript(() => ({ kind: 'sse', events: evs }));
    t = Date.now(); const st = await c.chat.completions.create({ model: 'x', messages: [], stream: true }); let k = 0; for await (const e of st) k++; console.log('chat parse', n, k, Date.now() - t);
    t = Date.now(); const rv = responsesTextStream(n); console.log('build resp', Date.now() - t);
    s.setScript(() => ({ kind: 'sse', events: rv }));
    t = Date.now(); const rs = await c.responses.create({ model: 'x', input: 'hi', stream: true }); k = 0; for await (const e of rs) k++; console.log('resp parse', k, Date.now() - t);
  }
  await s.close();
}, 60000);

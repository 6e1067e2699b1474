/**
 * Redaction of debug-log records: credentials by key and by look, binary payloads by field, data
 * URL and long base64 run, each payload replaced by a marker with its length and sha256 prefix.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactText, redactValue, serializeRecord } from '../../plugins/debug-log/redact.js';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex').slice(0, 12);
const ANTHROPIC_KEY = `sk-ant-api03-${'Ab3dE'.repeat(12)}`;
const GOOGLE_KEY = `AIzaSy${'Q7wErTy'.repeat(5)}`;

describe('credentials', () => {
  it('strings under credential keys become a marker with their length; numbers under "token" keys stay', () => {
    const out = redactValue({
      apiKey: 'k-123456',
      api_key: 'k2',
      'x-api-key': 'k3',
      headers: { Authorization: 'Bearer abc', cookie: 'sid=1', 'set-cookie': ['a=1', 'b=2'] },
      refresh_token: 'rt',
      client_secret: 'cs',
      password: 'hunter2',
      usage: { inputTokens: 12, outputTokens: 3, max_tokens: 100 },
      thinkingBudget: 2048,
      empty: { token: '' },
    });
    expect(out).toEqual({
      apiKey: '[REDACTED secret len=8]',
      api_key: '[REDACTED secret len=2]',
      'x-api-key': '[REDACTED secret len=2]',
      headers: { Authorization: '[REDACTED secret len=10]', cookie: '[REDACTED secret len=5]', 'set-cookie': ['[REDACTED secret len=3]', '[REDACTED secret len=3]'] },
      refresh_token: '[REDACTED secret len=2]',
      client_secret: '[REDACTED secret len=2]',
      password: '[REDACTED secret len=7]',
      usage: { inputTokens: 12, outputTokens: 3, max_tokens: 100 },
      thinkingBudget: 2048,
      empty: { token: '' },
    });
  });

  it('provider keys, bearer tokens and other known key shapes inside any text are replaced, the text around kept', () => {
    const text = `use ${ANTHROPIC_KEY} or ${GOOGLE_KEY}; header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX3g and ghp_${'a1B2'.repeat(8)} then password=swordfish done`;
    const out = redactText(text);
    for (const secret of [ANTHROPIC_KEY, GOOGLE_KEY, 'eyJhbGciOiJIUzI1NiJ9', `ghp_${'a1B2'.repeat(8)}`, 'swordfish']) expect(out).not.toContain(secret);
    expect(out).toMatch(/^use \[REDACTED secret len=73\] or \[REDACTED secret len=\d+\];/);
    expect(out).toContain('done');
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----';
    expect(redactText(`key:\n${pem}\n`)).toBe(`key:\n[REDACTED secret len=${pem.length}]\n`);
  });

  it('leaves ordinary text alone', () => {
    const text = 'The max_tokens: 100 setting and inputTokens=5 are usage. A token budget of 4k. sk-short';
    expect(redactText(text)).toBe(text);
  });
});

describe('binary payloads', () => {
  it('image and document data fields become a marker with length and sha256 prefix, whatever their size', () => {
    const small = Buffer.from('tiny').toString('base64');
    const big = randomBytes(3000).toString('base64');
    const out = redactValue({
      content: [
        { type: 'image', mimeType: 'image/png', data: small },
        { type: 'document', mimeType: 'application/pdf', data: big, name: 'a.pdf' },
        { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: big } },
        { inlineData: { mimeType: 'image/webp', data: small } },
        { type: 'text', data: 'not binary' },
      ],
    });
    expect(out.content).toEqual([
      { type: 'image', mimeType: 'image/png', data: `[REDACTED base64 len=${small.length} sha256=${sha(small)}]` },
      { type: 'document', mimeType: 'application/pdf', data: `[REDACTED base64 len=${big.length} sha256=${sha(big)}]`, name: 'a.pdf' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: `[REDACTED base64 len=${big.length} sha256=${sha(big)}]` } },
      { inlineData: { mimeType: 'image/webp', data: `[REDACTED base64 len=${small.length} sha256=${sha(small)}]` } },
      { type: 'text', data: 'not binary' },
    ]);
  });

  it('data: URLs keep their media type and lose their payload', () => {
    const payload = randomBytes(90).toString('base64');
    expect(redactText(`see <img src="data:image/png;base64,${payload}"> here`)).toBe(`see <img src="data:image/png;base64,[REDACTED base64 len=${payload.length} sha256=${sha(payload)}]"> here`);
  });

  it('base64 runs longer than 256 characters inside text are replaced; shorter runs and long non-random runs stay', () => {
    const long = randomBytes(300).toString('base64'); // 400 chars
    const short = randomBytes(150).toString('base64'); // 200 chars
    const out = redactText(`before ${long} middle ${short} ${'-'.repeat(300)} ${'a'.repeat(300)} after`);
    expect(out).toBe(`before [REDACTED base64 len=${long.length} sha256=${sha(long)}] middle ${short} ${'-'.repeat(300)} ${'a'.repeat(300)} after`);
  });

  it('bytes are a marker too, and a whole record serializes to one line', () => {
    const line = serializeRecord({ kind: 'x', raw: Buffer.from('hello'), text: 'a\nb' });
    expect(line).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({ kind: 'x', raw: `[REDACTED bytes len=5 sha256=${sha('hello')}]`, text: 'a\nb' });
  });
});

/**
 * `liveagent chat --attach FILE` end to end, the CLI from source in a child process against the
 * wire-faithful mocks (which refuse malformed media parts as the APIs do): a PNG reaches each of
 * the three providers as its native image part and a text file as text; a PDF goes as a native
 * document to Anthropic (and Gemini) and as its extracted text where it is not native (an
 * OpenAI-compatible server); the stored copy sits under uploads with a safe name; the model can
 * Read the reference path but not Write it; text mode refuses an attachment (exit 2);
 * `--regenerate` and an attachment-only message on an existing conversation.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { geminiReply, geminiStream, startMockGemini, MOCK_GEMINI_KEY, type GeminiMockServer } from '../fixtures/mock-gemini.js';
import { chatCompletionReply, responsesReply, startMockOpenAI, DEFAULT_API_KEY, type MockOpenAI } from '../fixtures/mock-openai.js';
import type { RecordedRequest } from '../fixtures/mock-http.js';
import { bundledChild } from '../helpers/child-bundle.js';
import { PDF_FIXTURE, PDF_TEXT, removeTempDirs, tempDir, tinyPng } from '../helpers/uploads-fixtures.js';

const cli = bundledChild('tests/fixtures/uploads-cli-child.ts', 'uploads-cli');

let anthropic: MockAnthropicServer;
let gemini: GeminiMockServer;
let openai: MockOpenAI;

/** The reference text's path="…" of the first attachment in a request body. */
const referencedPath = (req: RecordedRequest) => /path=\\"([^"\\]+)\\"/.exec(JSON.stringify(req.body))?.[1];

beforeAll(async () => {
  anthropic = await startMockAnthropic({
    script: (req) => {
      const body = JSON.stringify(req.body);
      if (!body.includes('read then overwrite it')) return anthropicReply({ text: 'Seen.' });
      const file = referencedPath(req)!;
      if (body.includes('toolu_w')) return anthropicReply({ text: 'Done.' });
      if (body.includes('toolu_r')) return anthropicReply({ toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: file, content: 'changed' } }] });
      return anthropicReply({ toolUses: [{ id: 'toolu_r', name: 'Read', input: { file_path: file } }] });
    },
  });
  gemini = await startMockGemini({ script: () => geminiStream(geminiReply({ text: 'Seen.' })) });
  openai = await startMockOpenAI({
    script: (req) => (req.path.startsWith('/v1/responses') ? { kind: 'sse', events: responsesReply({ text: 'Seen.', request: req.body }) } : { kind: 'sse', events: chatCompletionReply({ text: 'Seen.', includeUsage: true }) }),
  });
});
afterAll(async () => {
  await Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]);
  removeTempDirs();
});

function home(): string {
  const h = tempDir();
  const settings = {
    providers: {
      claude_code: { apiKey: 'k', baseUrl: anthropic.url },
      gemini: { apiKey: MOCK_GEMINI_KEY, baseUrl: gemini.url, defaultModel: 'gemini-2.5-pro' },
      codex: { apiKey: DEFAULT_API_KEY, baseUrl: `${openai.url}/v1`, api: 'responses', defaultModel: 'gpt-5' },
    },
    customProviders: [{ id: 'local-llm', name: 'Local LLM', format: 'openai-chat', baseUrl: `${openai.url}/v1`, apiKey: DEFAULT_API_KEY, defaultModel: 'qwen3' }],
  };
  fs.writeFileSync(path.join(h, 'settings.json'), JSON.stringify(settings));
  return h;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  events: Array<Record<string, any>>;
}

function liveagent(args: string[], h: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC|OPENAI|GEMINI)_/.test(k)) env[k] = v;
    env.LIVEAGENT_HOME = h;
    const child = spawn(process.execPath, [cli.entry(), ...args], { env, cwd: h, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`liveagent ${args.join(' ')} timed out\n${stderr}`));
    }, 25_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const events = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>);
      resolve({ code, stdout, stderr, events });
    });
    child.stdin.end();
  });
}

/** Files to attach, in a folder of their own (not the uploads folder). */
function files(h: string) {
  const dir = fs.mkdtempSync(path.join(h, 'files-'));
  const png = tinyPng(3, 2, Math.floor(Math.random() * 100));
  const write = (name: string, data: Buffer | string) => {
    fs.writeFileSync(path.join(dir, name), data);
    return path.join(dir, name);
  };
  return { png, pngFile: write('shot.png', png), textFile: write('notes.txt', 'line one\nline two\n'), pdfFile: write('report.pdf', fs.readFileSync(PDF_FIXTURE)), write };
}

const requestsSince = (server: { requests: RecordedRequest[] }, n: number) => server.requests.slice(n).filter((r) => r.method === 'POST');

describe('liveagent chat --attach', () => {
  const CASES = [
    { provider: 'claude_code', server: () => anthropic },
    { provider: 'codex', server: () => openai },
    { provider: 'gemini', server: () => gemini },
  ] as const;

  for (const c of CASES) {
    it(`${c.provider}: a PNG arrives as the native image part and a text file as text; the copy is under uploads with a safe name`, async () => {
      const h = home();
      const f = files(h);
      const before = c.server().requests.length;
      const r = await liveagent(['chat', '--json', '--provider', c.provider, '--attach', f.pngFile, '--attach', f.textFile, 'describe these'], h);
      expect(r.code, r.stderr).toBe(0);
      const [req] = requestsSince(c.server(), before);
      const b64 = f.png.toString('base64');
      const body = req!.body;
      if (c.provider === 'claude_code') {
        const content = body.messages[0].content;
        expect(content).toContainEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64 } });
        expect(content.map((x: { text?: string }) => x.text ?? '').join('\n')).toContain('<file name="notes.txt">\nline one\nline two\n\n</file>');
      } else if (c.provider === 'codex') {
        const content = body.input[0].content;
        expect(content).toContainEqual({ type: 'input_image', image_url: `data:image/png;base64,${b64}`, detail: 'auto' });
        expect(content.map((x: { text?: string }) => x.text ?? '').join('\n')).toContain('<file name="notes.txt">');
      } else {
        const parts = body.contents[0].parts;
        expect(parts).toContainEqual({ inlineData: { mimeType: 'image/png', data: b64 } });
        expect(parts.map((x: { text?: string }) => x.text ?? '').join('\n')).toContain('<file name="notes.txt">');
      }
      // History holds references, and the stored copies are under uploads.
      const user = r.events.find((e) => e.type === 'agent_start')!.userMessage;
      const [png, txt] = user.content.slice(1);
      expect(png).toMatchObject({ type: 'attachment', name: 'shot.png', mediaType: 'image/png', size: f.png.length, path: expect.stringMatching(new RegExp(`^${path.join(h, 'uploads')}/\\d+/shot\\.png$`)) });
      expect(txt).toMatchObject({ type: 'attachment', name: 'notes.txt', mediaType: 'text/plain' });
      expect(fs.readFileSync(png.path)).toEqual(f.png);
      expect(JSON.stringify(user)).not.toContain(b64);
    });
  }

  it('a PDF goes to Anthropic and Gemini as a native document, and as its extracted text to an OpenAI-compatible server', async () => {
    const h = home();
    const f = files(h);
    const pdf64 = fs.readFileSync(PDF_FIXTURE).toString('base64');
    let n = anthropic.requests.length;
    expect((await liveagent(['chat', '--provider', 'claude_code', '--attach', f.pdfFile, 'summarize'], h)).code).toBe(0);
    const a = requestsSince(anthropic, n)[0]!.body.messages[0].content;
    expect(a.find((x: { type: string }) => x.type === 'document')).toMatchObject({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf64 }, title: 'report.pdf' });

    n = gemini.requests.length;
    expect((await liveagent(['chat', '--provider', 'gemini', '--attach', f.pdfFile, 'summarize'], h)).code).toBe(0);
    expect(requestsSince(gemini, n)[0]!.body.contents[0].parts).toContainEqual({ inlineData: { mimeType: 'application/pdf', data: pdf64 } });

    n = openai.requests.length;
    const r = await liveagent(['chat', '--provider', 'local-llm', '--attach', f.pdfFile, 'summarize'], h);
    expect(r.code, r.stderr).toBe(0);
    const chat = requestsSince(openai, n)[0]!.body.messages.find((m: { role: string }) => m.role === 'user');
    expect(typeof chat.content).toBe('string');
    expect(chat.content).toContain(PDF_TEXT);
    expect(chat.content).toContain('<file name="report.pdf">');
    expect(chat.content).not.toContain(pdf64);
  });

  it('the model can Read the reference path; a Write to it is refused (uploads are read-only)', async () => {
    const h = home();
    const f = files(h);
    const r = await liveagent(['chat', '--json', '--provider', 'claude_code', '--attach', f.textFile, 'read then overwrite it'], h);
    expect(r.code, r.stderr).toBe(0);
    const ends = r.events.filter((e) => e.type === 'tool_execution_end');
    expect(ends.map((e) => e.toolName)).toEqual(['Read', 'Write']);
    expect(ends[0]!.result.isError).toBe(false);
    expect(ends[0]!.result.content[0].text).toContain('line two');
    expect(ends[1]!.result.isError).toBe(true);
    expect(ends[1]!.result.content[0].text).toMatch(/uploads folder, which is read-only/);
    const stored = r.events.find((e) => e.type === 'agent_start')!.userMessage.content[1].path;
    expect(fs.readFileSync(stored, 'utf8')).toBe('line one\nline two\n');
  });

  it('an attachment in text mode is refused with exit 2, and nothing is staged', async () => {
    const h = home();
    const f = files(h);
    const r = await liveagent(['chat', '--mode', 'text', '--provider', 'claude_code', '--attach', f.textFile, 'read it'], h);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--attach works in the tools modes only/);
    expect(fs.existsSync(path.join(h, 'uploads')) ? fs.readdirSync(path.join(h, 'uploads')) : []).toEqual([]);
    const missing = await liveagent(['chat', '--provider', 'claude_code', '--attach', path.join(h, 'nope.txt'), 'x'], h);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--attach .*nope\.txt: no such file/);
  });

  it('--regenerate resends the last user message; --attach without text adds an attachment-only message', async () => {
    const h = home();
    const f = files(h);
    const first = await liveagent(['chat', '--json', '--provider', 'claude_code', 'hello there'], h);
    expect(first.code, first.stderr).toBe(0);
    const id = first.events[0]!.conversationId as string;

    let n = anthropic.requests.length;
    const regen = await liveagent(['chat', '--json', '--provider', 'claude_code', '--conversation', id, '--regenerate'], h);
    expect(regen.code, regen.stderr).toBe(0);
    const resent = requestsSince(anthropic, n)[0]!.body.messages;
    expect(resent).toHaveLength(1);
    expect(resent[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'hello there', cache_control: { type: 'ephemeral' } }] });

    n = anthropic.requests.length;
    const only = await liveagent(['chat', '--json', '--provider', 'claude_code', '--conversation', id, '--attach', f.textFile], h);
    expect(only.code, only.stderr).toBe(0);
    const msgs = requestsSince(anthropic, n)[0]!.body.messages;
    expect(msgs).toHaveLength(3);
    const last = msgs[2].content.map((x: { text?: string }) => x.text).join('\n');
    expect(last).toContain('<file name="notes.txt">');
    expect(last).not.toContain('hello there');
    expect(only.events.find((e) => e.type === 'agent_start')!.userMessage.content.map((b: { type: string }) => b.type)).toEqual(['attachment']);

    // Regenerate an attachment-only message: the attachment goes again.
    n = anthropic.requests.length;
    expect((await liveagent(['chat', '--provider', 'claude_code', '--conversation', id, '--regenerate'], h)).code).toBe(0);
    expect(JSON.stringify(requestsSince(anthropic, n)[0]!.body.messages.at(-1))).toContain('<file name=\\"notes.txt\\">');
    expect((await liveagent(['chat', '--conversation', id, '--regenerate', 'extra text'], h)).code).toBe(2);
    expect((await liveagent(['chat', '--regenerate'], h)).code).toBe(2);
  });
});

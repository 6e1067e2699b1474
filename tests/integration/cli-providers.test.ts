/**
 * `liveagent chat --provider X --json` for every provider format, through the real CLI and the
 * official SDKs against the wire-faithful mocks: each streams thinking and text, completes a
 * tool-call round trip with a real builtin tool (Write), and shows a hosted-search block where
 * its format has one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropic, type MockAnthropicServer } from '../fixtures/mock-anthropic.js';
import { geminiReply, geminiStream, startMockGemini, MOCK_GEMINI_KEY, type GeminiMockServer } from '../fixtures/mock-gemini.js';
import { chatCompletionReply, responsesReply, startMockOpenAI, DEFAULT_API_KEY, type MockOpenAI } from '../fixtures/mock-openai.js';
import type { RecordedRequest } from '../fixtures/mock-http.js';
import { jsonLines, runCli, tempHome } from '../helpers/cli.js';

let anthropic: MockAnthropicServer;
let gemini: GeminiMockServer;
let openai: MockOpenAI;

const WRITE = { file_path: 'notes/hello.txt', content: 'hi from the model\n' };
const SEARCH = { query: 'liveagent runtime', sources: [{ title: 'LiveAgent docs', url: 'https://example.com/liveagent' }] };

/** Round 1 asks for a tool when the last message is the user's; round 2 answers. */
const lastIsToolResult = (req: RecordedRequest, kind: 'anthropic' | 'gemini' | 'responses' | 'chat') => {
  const b = req.body;
  if (kind === 'anthropic') return JSON.stringify(b.messages.at(-1)).includes('tool_result');
  if (kind === 'gemini') return JSON.stringify(b.contents.at(-1)).includes('functionResponse');
  if (kind === 'responses') return (b.input as Array<{ type?: string }>).at(-1)?.type === 'function_call_output';
  return b.messages.at(-1).role === 'tool';
};
const wantsSearch = (req: RecordedRequest) => JSON.stringify(req.body).includes('search again');

beforeAll(async () => {
  anthropic = await startMockAnthropic({
    script: (req) =>
      wantsSearch(req)
        ? anthropicReply({ webSearch: { query: SEARCH.query, results: SEARCH.sources, answer: [{ text: 'Found it.', cite: { result: 0, cited_text: 'LiveAgent' } }] } })
        : lastIsToolResult(req, 'anthropic')
          ? anthropicReply({ text: 'Wrote the file.' })
          : anthropicReply({ thinking: { text: 'Write the note.', signature: 'sig-1' }, toolUses: [{ id: 'toolu_1', name: 'Write', input: WRITE }], stopReason: 'tool_use' }),
  });
  gemini = await startMockGemini({
    script: (req) =>
      geminiStream(
        wantsSearch(req)
          ? geminiReply({ text: 'Found it.', grounding: { queries: [SEARCH.query], sources: SEARCH.sources.map((s) => ({ title: s.title, uri: s.url })) } })
          : lastIsToolResult(req, 'gemini')
            ? geminiReply({ text: 'Wrote the file.' })
            : geminiReply({ thoughts: 'Write the note.', functionCalls: [{ name: 'Write', args: WRITE }] }),
      ),
  });
  openai = await startMockOpenAI({
    script: (req) => {
      if (req.path.startsWith('/v1/responses')) {
        const events = wantsSearch(req)
          ? responsesReply({ text: 'Found it.', webSearch: SEARCH, request: req.body })
          : lastIsToolResult(req, 'responses')
            ? responsesReply({ text: 'Wrote the file.', request: req.body })
            : responsesReply({ reasoningSummary: 'Write the note.', functionCalls: [{ call_id: 'call_1', name: 'Write', args: WRITE }], request: req.body });
        return { kind: 'sse', events };
      }
      const events = lastIsToolResult(req, 'chat')
        ? chatCompletionReply({ text: 'Wrote the file.', includeUsage: true })
        : chatCompletionReply({ reasoning: 'Write the note.', toolCalls: [{ id: 'call_1', name: 'Write', args: WRITE }], includeUsage: true });
      return { kind: 'sse', events };
    },
  });
});
afterAll(() => Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]));

function settings() {
  return {
    providers: {
      claude_code: { apiKey: 'k', baseUrl: anthropic.url, webSearch: true },
      gemini: { apiKey: MOCK_GEMINI_KEY, baseUrl: gemini.url, webSearch: true, defaultModel: 'gemini-2.5-pro' },
      codex: { apiKey: DEFAULT_API_KEY, baseUrl: `${openai.url}/v1`, api: 'responses', webSearch: true, defaultModel: 'gpt-5' },
    },
    customProviders: [{ id: 'local-llm', name: 'Local LLM', format: 'openai-chat', baseUrl: `${openai.url}/v1`, apiKey: DEFAULT_API_KEY, defaultModel: 'qwen3' }],
  };
}

const CASES: Array<{ provider: string; search: boolean; chatApi?: boolean }> = [
  { provider: 'claude_code', search: true },
  { provider: 'codex', search: true },
  { provider: 'codex-chat', search: false, chatApi: true },
  { provider: 'gemini', search: true },
  { provider: 'local-llm', search: false },
];

describe('liveagent chat --provider X --json', () => {
  for (const c of CASES) {
    it(`${c.provider}: thinking, text and a Write round trip${c.search ? ', and a hosted-search block' : ''}`, async () => {
      const s = settings();
      if (c.chatApi) s.providers.codex.api = 'chat';
      const home = tempHome(s);
      const workdir = fs.mkdtempSync(path.join(home, 'work-'));
      const provider = c.chatApi ? 'codex' : c.provider;
      const r = await runCli(['chat', '--json', '--provider', provider, '--workdir', workdir, 'write a note'], { home });
      expect(r.code, r.stderr).toBe(0);
      const events = jsonLines(r.stdout);
      const deltas = events.filter((e) => e.type === 'message_update').map((e) => e.delta.kind);
      expect(deltas).toContain('thinking');
      expect(deltas).toContain('text');
      const end = events.find((e) => e.type === 'tool_execution_end');
      expect(end?.toolName).toBe('Write');
      expect(end?.result.isError).toBe(false);
      expect(fs.readFileSync(path.join(workdir, WRITE.file_path), 'utf8')).toBe(WRITE.content);
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', status: 'completed', editedFiles: [{ path: WRITE.file_path, action: 'write' }] });

      if (c.search) {
        const id = events[0]!.conversationId as string;
        const s2 = await runCli(['chat', '--json', '--mode', 'text', '--provider', provider, '--conversation', id, 'search again'], { home });
        expect(s2.code, s2.stderr).toBe(0);
        const ends = jsonLines(s2.stdout).filter((e) => e.type === 'message_end');
        const search = ends.flatMap((e) => e.message.content).find((b: { type: string }) => b.type === 'hosted_search');
        expect(search, JSON.stringify(ends)).toBeTruthy();
        expect(search.sources[0]).toMatchObject({ url: SEARCH.sources[0]!.url, title: SEARCH.sources[0]!.title });
      }
    });
  }
});

/**
 * The "model" behind the browser tests: a script for the wire-faithful Anthropic mock
 * (tests/fixtures/mock-anthropic.ts) that the real `claude_code` provider talks to. The last
 * user message picks a reply (`/tools`, `/slow 40`, `/gate name`, ...); anything else is echoed
 * back. Replies that must hold a run open wait on named gates the test releases, so nothing
 * depends on timing: the mock holds a round's response until its gate opens, and a Bash call
 * waits for the gate's file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { anthropicError, anthropicReply, type AnthropicReplyOptions, type AnthropicScript, type AnthropicScriptResult, type RecordedRequest } from '../../fixtures/mock-anthropic.js';

export interface ScriptControl {
  /** Let whatever waits at `gate name` go on (a held response, a Bash call). */
  release(name: string): void;
  /** Resolves when something reached `gate name`. */
  reached(name: string): Promise<void>;
  /** Hold the next summary (context checkpoint) request at `gate name` until it is released. */
  holdNextSummary(name: string): void;
  /** Requests the mock received, in order (`body` is the Messages API request). */
  requests: RecordedRequest[];
}

/** Wire shapes of the Messages API request, as far as the script reads them. */
interface WireBlock {
  type: string;
  text?: string;
  tool_use_id?: string;
  content?: string | WireBlock[];
  is_error?: boolean;
}
interface WireMessage {
  role: 'user' | 'assistant';
  content: string | WireBlock[];
}

const blocksOf = (m: WireMessage): WireBlock[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
const CONTINUATION = '(continuing the conversation)';

/** The user's last typed message (attached files and images apart) and how many rounds answered it so far. */
export function lastUserTurn(body: { messages?: WireMessage[] }): { text: string; round: number; images: number; files: string[] } {
  const messages = body.messages ?? [];
  const typed = (m: WireMessage) => m.role === 'user' && blocksOf(m).some((b) => (b.type === 'text' && b.text !== CONTINUATION) || b.type === 'image');
  let at = messages.length - 1;
  while (at >= 0 && !typed(messages[at]!)) at--;
  const blocks = at >= 0 ? blocksOf(messages[at]!) : [];
  const texts = blocks.flatMap((b) => (b.type === 'text' && b.text && b.text !== CONTINUATION ? [b.text] : []));
  return {
    // Attached files arrive as an <attachment> reference (and text files also as <file>): not typed text.
    text: texts.filter((t) => !t.startsWith('<file name=') && !t.startsWith('<attachment ')).join('\n').trim(),
    round: messages.slice(at + 1).filter((m) => m.role === 'assistant').length + 1,
    images: blocks.filter((b) => b.type === 'image').length,
    files: texts.flatMap((t) => /^<file name="([^"]+)">/.exec(t)?.slice(1, 2) ?? []),
  };
}

/** The tool results the request carries back (its last user message), as text. */
export function toolResultsOf(body: { messages?: WireMessage[] }): Array<{ toolUseId: string; text: string; isError: boolean }> {
  const last = body.messages?.at(-1);
  if (!last || last.role !== 'user') return [];
  return blocksOf(last).flatMap((b) => {
    if (b.type !== 'tool_result') return [];
    const text = typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join('\n');
    return [{ toolUseId: b.tool_use_id ?? '', text, isError: !!b.is_error }];
  });
}

/** The AskUserQuestion call `/ask` makes: two questions, the recommended option not first. */
export const ASK_QUESTIONS = [
  {
    id: 'q1',
    header: 'Database',
    prompt: 'Which database should we use?',
    options: [{ label: 'PostgreSQL', description: 'a server to run' }, { label: 'SQLite', description: 'zero setup', recommended: true }, { label: 'DuckDB' }],
  },
  { id: 'q2', header: 'Tests', prompt: 'Add tests?', options: [{ label: 'Yes' }, { label: 'No' }, { label: 'Later' }] },
];

interface Gate {
  open: boolean;
  waiters: Array<() => void>;
  reachedBy: Array<() => void>;
  hit: boolean;
}

/**
 * The compaction plugin's summary requests say "context checkpoint" in their system prompt.
 * The answer has every section it checks for and names the files and commands it asks for.
 */
export function isSummaryRequest(body: { system?: unknown }): boolean {
  return /context checkpoint/i.test(JSON.stringify(body.system ?? ''));
}

export const SUMMARY_SECTIONS = ['Task', 'Constraints', 'Current state', 'Files and artifacts', 'Decisions', 'Dead ends', 'Open loops', 'Next steps'];

export function summaryReply(prompt: string): string {
  // A conversation that mentions /nosummary gets an unusable one (the plugin then fails or prunes).
  if (prompt.includes('/nosummary')) return 'Sorry.';
  const named = /^- Name these in .*$/m.exec(prompt)?.[0].match(/`[^`]+`/g) ?? [];
  const said = [...prompt.matchAll(/^\[user\] (.+)$/gm)].map((m) => m[1]!.trim()).slice(-3);
  const body: Record<string, string[]> = {
    Task: [`The user is trying things out: ${said.map((t) => `"${t}"`).join(', ') || 'a short chat'}.`],
    'Current state': ['The assistant **echoed** every message back.'],
    'Files and artifacts': named.length ? named : ['none'],
  };
  return SUMMARY_SECTIONS.map((s) => `## ${s}\n${(body[s] ?? ['none']).map((l) => `- ${l}`).join('\n')}`).join('\n\n');
}

export function createModel(opts: { workdir: string; gatesDir: string }): { script: AnthropicScript; control: Omit<ScriptControl, 'requests'> } {
  const gates = new Map<string, Gate>();
  const gate = (name: string) => {
    let g = gates.get(name);
    if (!g) gates.set(name, (g = { open: false, waiters: [], reachedBy: [], hit: false }));
    return g;
  };
  const hit = (name: string) => {
    const g = gate(name);
    g.hit = true;
    for (const r of g.reachedBy.splice(0)) r();
    return g;
  };
  const wait = (name: string) => {
    const g = hit(name);
    return g.open ? Promise.resolve() : new Promise<void>((r) => g.waiters.push(r));
  };
  const gateFile = (name: string) => path.join(opts.gatesDir, name.replace(/[^A-Za-z0-9_-]/g, '_'));
  let summaryGate: string | undefined;
  const control = {
    holdNextSummary(name: string) {
      summaryGate = name;
    },
    release(name: string) {
      const g = gate(name);
      g.open = true;
      for (const w of g.waiters.splice(0)) w();
      fs.writeFileSync(gateFile(name), '');
    },
    reached(name: string) {
      const g = gate(name);
      return g.hit ? Promise.resolve() : new Promise<void>((r) => g.reachedBy.push(r));
    },
  };

  let toolSeq = 0;
  const failures = new Map<string, number>();
  const id = () => `toolu_e2e_${String(++toolSeq).padStart(4, '0')}`;
  const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i + 1} `);
  const inWorkdir = (p: string) => path.join(opts.workdir, p);
  const bash = (command: string) => ({ id: id(), name: 'Bash', input: { command } });

  const script: AnthropicScript = async (req, index): Promise<AnthropicScriptResult> => {
    const { text, round, images, files } = lastUserTurn(req.body ?? {});
    const [cmd, ...args] = text.split(/\s+/);
    // Every round reports the same shape of usage, so the usage line is predictable.
    const reply = (o: AnthropicReplyOptions) => anthropicReply({ usage: { input_tokens: 100 + index, output_tokens: 20, cache_read_input_tokens: 64 }, ...o });
    if (isSummaryRequest(req.body ?? {})) {
      const held = summaryGate;
      summaryGate = undefined;
      if (held) await wait(held);
      // A repair round asks again: the transcript is in the first message.
      const prompt = (req.body?.messages ?? []).map((m: WireMessage) => blocksOf(m).map((b) => b.text ?? '').join('\n')).join('\n');
      return reply({ text: summaryReply(prompt) });
    }
    // Silent memory extraction (the memory plugin's side request): one proposal from what the user said.
    if (JSON.stringify(req.body?.system ?? '').includes('You curate the long-term memory of an AI assistant.')) {
      const said = /remember that ([^."\\]+)/i.exec(JSON.stringify(req.body?.messages ?? []))?.[1];
      return reply({ text: JSON.stringify({ memories: said ? [{ text: `The user says ${said}`, scope: 'user', file: 'preferences.md' }] : [] }) });
    }
    const sse = (o: AnthropicReplyOptions, delayMs?: number) => ({ kind: 'sse' as const, events: reply(o), ...(delayMs ? { delayMs } : {}) });
    switch (cmd) {
      case '/slow':
        return sse({ text: words(Number(args[0] ?? 40)) }, Number(args[1] ?? 40));
      case '/gate': {
        // A run parked mid-reply: round 1 speaks and calls a quick tool, the response of round 2 waits for the gate.
        const name = args[0] ?? 'g';
        if (round === 1) return reply({ text: 'Before the gate. ', toolUses: [bash(`echo "at the gate ${name}"`)] });
        await wait(name);
        return reply({ text: 'After the gate.' });
      }
      case '/think':
        return sse({ thinking: { text: ['Let me weigh ', 'the options ', 'carefully.'], signature: 'c2lnbmF0dXJlLWUyZQ==' }, text: ['The answer is ', '42.'] }, 10);
      case '/code':
        return sse(
          {
            text: ['## Plan\n\n', '- first **bold** item\n', '- second `inline` item\n\n', '```ts\n', 'const answer: number = 42;\n', 'function greet(name: string) {\n  return `hi ${name}`;\n}\n', '```\n\n', 'Done.'],
          },
          5,
        );
      case '/plain':
        // A fence without a language holding plain prose (auto-detection once called it css).
        return reply({ text: 'Here:\n\n```\nremember to buy milk\nand call the bank today\n```\n' });
      case '/search':
        return reply({
          webSearch: {
            query: 'vue 3.5 release notes',
            results: [
              { title: 'Announcing Vue 3.5', url: 'https://blog.vuejs.org/posts/vue-3-5' },
              { title: 'Vue changelog', url: 'https://github.com/vuejs/core/blob/main/CHANGELOG.md' },
            ],
            answer: [{ text: 'Vue 3.5 reworked reactivity.' }],
          },
        });
      case '/tools':
        // Real builtin tools in the test's workdir: two commands, a failing read, then a write.
        if (round === 1) return reply({ text: 'Let me check a few things.', toolUses: [bash('echo alpha'), bash('echo beta'), { id: id(), name: 'Read', input: { file_path: inWorkdir('missing.txt') } }] });
        if (round === 2) return reply({ toolUses: [{ id: id(), name: 'Write', input: { file_path: inWorkdir('src/app.ts'), content: 'export {};\n' } }] });
        return sse({ text: ['All done: two echoes, ', 'one failure, one file written.'] }, 10);
      case '/diff': {
        // Write a file, Edit it, Write it again: three diffs (issue 18 item 12).
        const file = inWorkdir('notes.txt');
        const body = Array.from({ length: 12 }, (_, i) => `note ${i + 1}`).join('\n') + '\n';
        if (round === 1) return reply({ text: 'Writing notes.', toolUses: [{ id: id(), name: 'Write', input: { file_path: file, content: body } }] });
        if (round === 2) return reply({ toolUses: [{ id: id(), name: 'Edit', input: { file_path: file, old_string: 'note 6\n', new_string: 'note six\nnote six and a half\n' } }] });
        if (round === 3) return reply({ toolUses: [{ id: id(), name: 'Write', input: { file_path: file, content: body.replace('note 1\n', 'first note\n').replace('note 12\n', '') } }] });
        return reply({ text: 'Diffs done.' });
      }
      case '/pwd':
        if (round === 1) return reply({ toolUses: [bash('pwd')] });
        return reply({ text: 'Reported the folder.' });
      case '/toolgate': {
        // A tool call held open: the command waits until the test releases the gate.
        const name = args[0] ?? 'tool';
        if (round === 1) {
          hit(name);
          return reply({ toolUses: [bash(`until [ -e '${gateFile(name)}' ]; do sleep 0.05; done; echo released`)] });
        }
        return reply({ text: 'Tool finished.' });
      }
      case '/ask':
        if (round === 1) return reply({ toolUses: [{ id: id(), name: 'AskUserQuestion', input: { questions: ASK_QUESTIONS } }] });
        return reply({ text: 'Noted.' });
      case '/fail-auth':
        return anthropicError(401, 'authentication_error', 'invalid x-api-key');
      case '/fail-once': {
        const n = (failures.get(text) ?? 0) + 1;
        failures.set(text, n);
        if (n === 1) return anthropicError(503, 'api_error', 'upstream connect error (503)');
        return sse({ text: ['Recovered ', 'on retry.'] }, 10);
      }
      default: {
        const extra = `${images ? ` [images: ${images}]` : ''}${files.length ? ` [files: ${files.join(', ')}]` : ''}`;
        return sse({ text: ['Echo: ', text || '(no text)', extra].filter(Boolean) }, 15);
      }
    }
  };
  return { script, control };
}

/**
 * The provider behind the browser tests. The last user message picks a script (`/tools`,
 * `/slow 40`, `/gate name`, ...); anything else is echoed back. Scripts that must hold a run
 * open wait on named gates the test releases, so nothing depends on timing.
 */
import type { ContentBlock, Message, Provider, ProviderEvent, ProviderRequest, Settings } from '../../../plugin-api.js';

export interface ScriptControl {
  /** Let streams parked at `gate name` go on. */
  release(name: string): void;
  /** Resolves when a stream reached `gate name`. */
  reached(name: string): Promise<void>;
  /** Wait at a gate (tools use it to hold a call open). */
  wait(name: string, signal: AbortSignal): Promise<void>;
  /** Requests seen, in order. */
  requests: ProviderRequest[];
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

function lastUser(messages: Message[]): { text: string; round: number; images: number; files: string[] } {
  let at = messages.length - 1;
  while (at >= 0 && messages[at]!.role !== 'user') at--;
  const m = messages[at];
  const round = messages.slice(at + 1).filter((x) => x.role === 'assistant').length + 1;
  const texts = (m?.content ?? []).flatMap((b) => (b.type === 'text' ? [b.text] : []));
  const files = texts.flatMap((t) => /^<file name="([^"]+)">/.exec(t)?.slice(1, 2) ?? []);
  return {
    text: texts.filter((t) => !t.startsWith('<file name=')).join('\n').trim(),
    round,
    images: (m?.content ?? []).filter((b) => b.type === 'image').length,
    files,
  };
}

type Step = { kind: 'text' | 'thinking'; pieces: string[]; delayMs?: number } | { kind: 'tool'; id: string; name: string; input: Record<string, unknown> } | { kind: 'block'; block: ContentBlock } | { kind: 'gate'; name: string } | { kind: 'hang' };

interface Script {
  steps: Step[];
  error?: { message: string; code: string; status?: number; retryable?: boolean };
}

let toolSeq = 0;

function scriptFor(req: ProviderRequest, failures: Map<string, number>): Script {
  const { text, round, images, files } = lastUser(req.messages);
  const [cmd, ...args] = text.split(/\s+/);
  const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i + 1} `);
  const id = () => `call_${++toolSeq}`;
  switch (cmd) {
    case '/slow':
      return { steps: [{ kind: 'text', pieces: words(Number(args[0] ?? 40)), delayMs: Number(args[1] ?? 40) }] };
    case '/gate':
      return { steps: [{ kind: 'text', pieces: ['Before the gate. '] }, { kind: 'gate', name: args[0] ?? 'g' }, { kind: 'text', pieces: ['After the gate.'] }] };
    case '/hang':
      return { steps: [{ kind: 'text', pieces: ['Working on it'] }, { kind: 'hang' }] };
    case '/think':
      return { steps: [{ kind: 'thinking', pieces: ['Let me weigh ', 'the options ', 'carefully.'] }, { kind: 'text', pieces: ['The answer is ', '42.'] }] };
    case '/code':
      return {
        steps: [
          {
            kind: 'text',
            delayMs: 5,
            pieces: ['## Plan\n\n', '- first **bold** item\n', '- second `inline` item\n\n', '```ts\n', 'const answer: number = 42;\n', 'function greet(name: string) {\n  return `hi ${name}`;\n}\n', '```\n\n', 'Done.'],
          },
        ],
      };
    case '/search':
      return {
        steps: [
          {
            kind: 'block',
            block: {
              type: 'hosted_search',
              provider: 'scripted',
              queries: ['vue 3.5 release notes'],
              status: 'completed',
              sources: [
                { title: 'Announcing Vue 3.5', url: 'https://blog.vuejs.org/posts/vue-3-5', snippet: 'Reactivity refactor and more.' },
                { title: 'Vue changelog', url: 'https://github.com/vuejs/core/blob/main/CHANGELOG.md' },
              ],
            },
          },
          { kind: 'text', pieces: ['Vue 3.5 reworked reactivity.'] },
        ],
      };
    case '/tools':
      if (round === 1)
        return {
          steps: [
            { kind: 'text', pieces: ['Let me check a few things.'] },
            { kind: 'tool', id: id(), name: 'Echo', input: { text: 'alpha' } },
            { kind: 'tool', id: id(), name: 'Echo', input: { text: 'beta' } },
            { kind: 'tool', id: id(), name: 'Explode', input: { reason: 'on purpose' } },
          ],
        };
      if (round === 2) return { steps: [{ kind: 'tool', id: id(), name: 'FakeWrite', input: { file_path: 'src/app.ts', content: 'export {};' } }] };
      return { steps: [{ kind: 'text', pieces: ['All done: two echoes, ', 'one failure, one file written.'] }] };
    case '/pwd':
      if (round === 1) return { steps: [{ kind: 'tool', id: id(), name: 'Pwd', input: {} }] };
      return { steps: [{ kind: 'text', pieces: ['Reported the folder.'] }] };
    case '/toolgate':
      if (round === 1) return { steps: [{ kind: 'tool', id: id(), name: 'Echo', input: { text: 'slow', waitGate: args[0] ?? 'tool' } }] };
      return { steps: [{ kind: 'text', pieces: ['Tool finished.'] }] };
    case '/ask':
      if (round === 1)
        return {
          steps: [
            {
              kind: 'tool',
              id: id(),
              name: 'AskUserQuestion',
              input: {
                questions: [
                  { id: 'q1', header: 'Database', prompt: 'Which database should we use?', options: [{ label: 'SQLite', recommended: true, description: 'zero setup' }, { label: 'PostgreSQL' }] },
                  { id: 'q2', prompt: 'Add tests?', options: [{ label: 'Yes' }, { label: 'No' }] },
                ],
              },
            },
          ],
        };
      return { steps: [{ kind: 'text', pieces: ['Noted.'] }] };
    case '/fail-auth':
      return { steps: [], error: { message: 'invalid x-api-key', code: 'auth', status: 401 } };
    case '/fail-once': {
      const n = (failures.get(text) ?? 0) + 1;
      failures.set(text, n);
      if (n === 1) return { steps: [], error: { message: 'upstream connect error (503)', code: 'overloaded', status: 503 } };
      return { steps: [{ kind: 'text', pieces: ['Recovered ', 'on retry.'] }] };
    }
    default: {
      const extra = `${images ? ` [images: ${images}]` : ''}${files.length ? ` [files: ${files.join(', ')}]` : ''}`;
      return { steps: [{ kind: 'text', pieces: ['Echo: ', text || '(no text)', extra], delayMs: 15 }] };
    }
  }
}

export function scriptedProvider(id = 'scripted', opts: { configured?: (s: Settings) => boolean; displayName?: string } = {}): Provider & { control: ScriptControl } {
  const gates = new Map<string, { open: boolean; waiters: Array<() => void>; reached: Array<() => void>; hit: boolean }>();
  const gate = (name: string) => {
    let g = gates.get(name);
    if (!g) gates.set(name, (g = { open: false, waiters: [], reached: [], hit: false }));
    return g;
  };
  const failures = new Map<string, number>();
  const requests: ProviderRequest[] = [];
  const control: ScriptControl = {
    requests,
    release(name) {
      const g = gate(name);
      g.open = true;
      for (const w of g.waiters.splice(0)) w();
    },
    reached(name) {
      const g = gate(name);
      return g.hit ? Promise.resolve() : new Promise((r) => g.reached.push(r));
    },
    async wait(name, signal) {
      const g = gate(name);
      g.hit = true;
      for (const r of g.reached.splice(0)) r();
      if (!g.open) await new Promise<void>((r) => (g.waiters.push(r), signal.addEventListener('abort', () => r(), { once: true })));
    },
  };
  return {
    id,
    displayName: opts.displayName ?? 'Scripted',
    defaultModel: 'scripted-1',
    models: [
      { id: 'scripted-1', name: 'Scripted One' },
      { id: 'scripted-2', name: 'Scripted Two' },
    ],
    control,
    isConfigured: (s) => (opts.configured ? opts.configured(s) : true),
    async *stream(request, signal): AsyncGenerator<ProviderEvent> {
      requests.push(request);
      const script = scriptFor(request, failures);
      if (script.error) {
        yield { type: 'error', error: { ...script.error, retryable: script.error.retryable ?? false } };
        return;
      }
      let index = 0;
      let toolCalls = 0;
      for (const step of script.steps) {
        if (signal.aborted) break;
        if (step.kind === 'gate') {
          await control.wait(step.name, signal);
          continue;
        }
        if (step.kind === 'hang') {
          await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
          break;
        }
        if (step.kind === 'block') {
          yield { type: 'block_end', index: index++, block: step.block };
          continue;
        }
        if (step.kind === 'tool') {
          toolCalls++;
          yield { type: 'block_start', index, block: { type: 'tool_call', id: step.id, name: step.name } };
          const json = JSON.stringify(step.input);
          yield { type: 'tool_input_delta', index, json: json.slice(0, 5) };
          yield { type: 'tool_input_delta', index, json: json.slice(5) };
          yield { type: 'block_end', index: index++, block: { type: 'tool_call', id: step.id, name: step.name, input: step.input as never } };
          continue;
        }
        yield { type: 'block_start', index, block: { type: step.kind } };
        for (const p of step.pieces) {
          if (signal.aborted) break;
          yield step.kind === 'text' ? { type: 'text_delta', index, text: p } : { type: 'thinking_delta', index, text: p };
          await sleep(step.delayMs ?? 10, signal);
        }
        const full = step.pieces.join('');
        yield { type: 'block_end', index: index++, block: step.kind === 'text' ? { type: 'text', text: full } : { type: 'thinking', thinking: full, signature: 'sig', provider: id } };
      }
      if (signal.aborted) {
        yield { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } };
        return;
      }
      yield { type: 'usage', usage: { inputTokens: 100 + requests.length, outputTokens: 20, cacheReadTokens: 64, cacheWriteTokens: 0 } };
      yield { type: 'done', stopReason: toolCalls ? 'tool_use' : 'end' };
    },
  };
}

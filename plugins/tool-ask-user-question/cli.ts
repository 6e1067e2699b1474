/**
 * The `cli.interaction` service: AskUserQuestion in `liveagent chat`. Without --json the
 * questions are asked on the terminal (stderr) and the choices read from stdin lines; with
 * --json the kernel already prints the `ask_user_question` event on stdout and answers come in
 * as JSON lines on stdin: {"item_id": "<toolCallId>", "request_json": "<answers array as JSON>"}.
 * A bad line gets one diagnostic line on stderr and the question stays pending. When stdin ends,
 * pending questions wait for their deadline.
 */
import { z } from 'zod';
import type { Disposable } from '../../plugin-api.js';
import type { Answer } from './answers.js';
import type { PendingQuestion, PendingQuestions, Settlement } from './pending.js';
import { describeOutcome } from './pending.js';
import type { AskUserQuestionService } from './service.js';
import { diagnostics, LazyLineReader, parseLine, type CliIo } from '../../lib/tool-shared/cli-lines.js';

export type { CliIo };

/** Matches `CliInteraction` / `CliAttachment` in hosts/cli/chat.ts (the host routes each stdin line to the interaction that owns it). */
export interface CliInteraction {
  attach(session: { json: boolean; io: CliIo; conversationId: string }): Disposable & { owns(itemId: string): boolean; awaitingInput(): boolean };
}

const AnswerLineSchema = z.object({
  item_id: z.string('item_id must be a string (the toolCallId)').min(1, 'item_id must not be empty'),
  // The contract says a JSON-encoded string; an inline array is accepted too, it is unambiguous.
  request_json: z.union([z.string(), z.array(z.unknown())], 'request_json must be a JSON-encoded answers array'),
  conversation_id: z.string().optional(),
});


export function createCliInteraction(table: PendingQuestions, service: AskUserQuestionService): CliInteraction {
  return {
    attach(session) {
      const { io, conversationId } = session;
      const diag = diagnostics(io);
      const subs: Disposable[] = [];
      const human = session.json ? undefined : new HumanPrompter(io, service, conversationId, diag);

      const onLine = (line: string) => {
        if (human) return human.line(line);
        const a = parseLine(line, AnswerLineSchema, { conversationId, diag, what: 'answer', expected: '{"item_id": "<toolCallId>", "request_json": "<answers array as JSON>"}' });
        if (!a) return;
        const requestJson = typeof a.request_json === 'string' ? a.request_json : JSON.stringify(a.request_json);
        try {
          service.answer({ toolCallId: a.item_id, conversationId, requestJson });
        } catch (err) {
          diag(`answer ignored: ${(err as Error).message}`);
        }
      };

      // stdin is read only once a question is asked, so a run without questions leaves it alone.
      const reader = new LazyLineReader(io, onLine, () => {
        const waiting = table.list(conversationId);
        if (waiting.length && human) io.stderr.write('\n');
        if (waiting.length) diag(`stdin ended; ${waiting.length === 1 ? 'the question stays' : `${waiting.length} questions stay`} pending until ${waiting.some((q) => q.deadlineAt === null) ? 'the run is stopped' : 'the timeout'}`);
      });

      const asked = (q: PendingQuestion) => {
        if (q.conversationId !== conversationId) return;
        reader.start();
        if (reader.ended) diag(`stdin has ended: question "${q.toolCallId}" stays pending until ${q.deadlineAt === null ? 'the run is stopped' : 'the timeout'}`);
        human?.enqueue(q);
      };
      subs.push(table.onAsked(asked));
      subs.push(
        table.onSettled((q, s) => {
          if (q.conversationId === conversationId) human?.settled(q, s);
        }),
      );
      for (const q of table.list(conversationId)) asked(q);

      return {
        owns: (itemId) => table.isPending(conversationId, itemId),
        awaitingInput: () => !!human?.waiting(),
        dispose() {
          for (const s of subs.splice(0)) s.dispose();
          reader.close();
        },
      };
    },
  };
}

/** Asks one question set at a time on the terminal, one question after another. */
class HumanPrompter {
  private queue: PendingQuestion[] = [];
  private current?: { q: PendingQuestion; index: number; answers: Answer[] };

  constructor(
    private readonly io: CliIo,
    private readonly service: AskUserQuestionService,
    private readonly conversationId: string,
    private readonly diag: (msg: string) => void,
  ) {}

  waiting(): boolean {
    return !!this.current;
  }

  enqueue(q: PendingQuestion) {
    this.queue.push(q);
    // Deferred so the run's own "[tool] AskUserQuestion" line is printed before the question.
    setImmediate(() => {
      if (!this.current) this.next();
    });
  }

  settled(q: PendingQuestion, s: Settlement) {
    this.queue = this.queue.filter((x) => x.toolCallId !== q.toolCallId);
    if (this.current?.q.toolCallId !== q.toolCallId) return;
    if (s.outcome !== 'answered') {
      const picked = s.answers.map((a) => ('selectedLabel' in a ? a.selectedLabel : a.custom)).join(', ');
      this.out(`\n[question] ${describeOutcome(s.outcome)}${picked ? `: took ${picked}` : ''}\n`);
    }
    this.current = undefined;
    this.next();
  }

  line(text: string) {
    const cur = this.current;
    if (!cur) return;
    const question = cur.q.questions[cur.index]!;
    const t = text.trim();
    if (!t) return this.out(`type a number (1-${question.options.length}) or your own answer: `);
    let answer: Answer;
    const n = /^\d+$/.test(t) ? Number(t) : NaN;
    const byLabel = question.options.find((o) => o.label.toLowerCase() === t.toLowerCase());
    if (Number.isInteger(n) && n >= 1 && n <= question.options.length) answer = { questionId: question.id, selectedLabel: question.options[n - 1]!.label };
    else if (/^\d+$/.test(t)) return this.out(`there is no option ${t}; type a number (1-${question.options.length}) or your own answer: `);
    else if (byLabel) answer = { questionId: question.id, selectedLabel: byLabel.label };
    else if (t.length > cur.q.maxCustomLength) return this.out(`that answer is too long (${t.length} characters, at most ${cur.q.maxCustomLength}); try again: `);
    else answer = { questionId: question.id, custom: t };
    cur.answers.push(answer);
    cur.index++;
    if (cur.index < cur.q.questions.length) return this.ask();
    try {
      this.service.answer({ toolCallId: cur.q.toolCallId, conversationId: this.conversationId, requestJson: JSON.stringify(cur.answers) });
    } catch (err) {
      this.diag(`answer refused: ${(err as Error).message}`);
      if (this.current === cur) {
        // Still pending (e.g. a typed answer was refused): ask the set again from the start.
        cur.index = 0;
        cur.answers = [];
        this.ask();
      }
    }
  }

  private next() {
    const q = this.queue.shift();
    if (!q) return;
    this.current = { q, index: 0, answers: [] };
    this.ask();
  }

  private ask() {
    const cur = this.current!;
    const question = cur.q.questions[cur.index]!;
    const total = cur.q.questions.length;
    const lines = [`\n[question${total > 1 ? ` ${cur.index + 1}/${total}` : ''}] ${question.header ? `${question.header}: ` : ''}${question.prompt}`];
    question.options.forEach((o, i) => lines.push(`  ${i + 1}. ${o.label}${o.recommended ? ' (recommended)' : ''}${o.description ? ` - ${o.description}` : ''}`));
    lines.push('  or type your own answer');
    if (cur.q.deadlineAt !== null) {
      const left = Math.max(0, cur.q.deadlineAt - Date.now());
      const fallback = (question.options.find((o) => o.recommended) ?? question.options[0]!).label;
      lines.push(`  (${formatClock(left)} left; then "${fallback}" is taken)`);
    }
    this.out(`${lines.join('\n')}\n> `);
  }

  private out(s: string) {
    this.io.stderr.write(s);
  }
}

function formatClock(ms: number): string {
  const s = Math.ceil(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * The `cli.interaction.permissions` service: approvals in `liveagent chat`. With --json the
 * kernel already prints the `tool_approval` event on stdout and decisions come in as JSON lines
 * on stdin: {"item_id": "<toolCallId>", "decision": "approve" | "deny" | "approve_session"}.
 * Without --json the call is shown on stderr and a typed y / n / a decides. The host routes each
 * stdin line to the interaction that owns it (`owns`, `awaitingInput`), so this and
 * AskUserQuestion share one stdin. A bad line gets one diagnostic and the approval stays pending;
 * when stdin ends, pending approvals wait for their deadline (then they are denied).
 */
import { z } from 'zod';
import type { Disposable } from '../../plugin-api.js';
import { DECISIONS, type ApprovalRequest, type Decision, type Settlement } from './events.js';
import { describeOutcome, type PendingApprovals } from './pending.js';
import type { PermissionsService } from './service.js';
import { diagnostics, LazyLineReader, parseLine, type CliIo } from '../../lib/tool-shared/cli-lines.js';

export type { CliIo };

/** Matches `CliInteraction` / `CliAttachment` in hosts/cli/chat.ts. */
export interface CliInteraction {
  attach(session: { json: boolean; io: CliIo; conversationId: string }): Disposable & { owns(itemId: string): boolean; awaitingInput(): boolean };
}

const DecisionLineSchema = z.object({
  item_id: z.string('item_id must be a string (the toolCallId)').min(1, 'item_id must not be empty'),
  decision: z.enum(DECISIONS as [Decision, ...Decision[]], 'decision must be "approve", "deny" or "approve_session"'),
  conversation_id: z.string().optional(),
});

export function createCliInteraction(table: PendingApprovals, service: PermissionsService): CliInteraction {
  return {
    attach(session) {
      const { io, conversationId } = session;
      const diag = diagnostics(io);
      const subs: Disposable[] = [];
      const human = session.json ? undefined : new HumanPrompter(io, service, conversationId, diag);

      const onLine = (line: string) => {
        if (human) return human.line(line);
        const d = parseLine(line, DecisionLineSchema, { conversationId, diag, what: 'approval', expected: '{"item_id": "<toolCallId>", "decision": "approve" | "deny" | "approve_session"}' });
        if (!d) return;
        try {
          service.decide({ toolCallId: d.item_id, conversationId, decision: d.decision });
        } catch (err) {
          diag(`approval ignored: ${(err as Error).message}`);
        }
      };

      // stdin is read only once an approval is pending, so a run that needs none leaves it alone.
      const reader = new LazyLineReader(io, onLine, () => {
        const waiting = table.list(conversationId).length;
        if (!waiting) return;
        if (human) io.stderr.write('\n');
        diag(`stdin ended; ${waiting === 1 ? 'the approval stays' : `${waiting} approvals stay`} pending until the deadline, then ${waiting === 1 ? 'it is' : 'they are'} denied`);
      });

      const asked = (r: ApprovalRequest) => {
        if (r.conversationId !== conversationId) return;
        reader.start();
        if (reader.ended) diag(`stdin has ended: approval "${r.toolCallId}" stays pending until the deadline, then it is denied`);
        human?.enqueue(r);
      };
      subs.push(table.onAsked(asked));
      subs.push(
        table.onSettled((r, s) => {
          if (r.conversationId === conversationId) human?.settled(r, s);
        }),
      );
      for (const r of table.list(conversationId)) asked(r);

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

/** Shows one approval at a time on the terminal and reads y / n / a. */
class HumanPrompter {
  private queue: ApprovalRequest[] = [];
  private current?: ApprovalRequest;

  constructor(
    private readonly io: CliIo,
    private readonly service: PermissionsService,
    private readonly conversationId: string,
    private readonly diag: (msg: string) => void,
  ) {}

  waiting(): boolean {
    return !!this.current;
  }

  enqueue(r: ApprovalRequest) {
    this.queue.push(r);
    // Deferred so the run's own "[tool] Bash ..." line is printed before the prompt.
    setImmediate(() => {
      if (!this.current) this.next();
    });
  }

  settled(r: ApprovalRequest, s: Settlement) {
    this.queue = this.queue.filter((x) => x.toolCallId !== r.toolCallId);
    if (this.current?.toolCallId !== r.toolCallId) return;
    // A person's own answer needs no echo; a deadline or a stop does.
    if (!s.decision) this.out(`\n[approval] ${r.toolName}: ${describeOutcome(s.outcome)}\n`);
    this.current = undefined;
    this.next();
  }

  line(text: string) {
    const cur = this.current;
    if (!cur) return;
    const t = text.trim().toLowerCase();
    const decision: Decision | undefined = ['y', 'yes'].includes(t) ? 'approve' : ['n', 'no'].includes(t) ? 'deny' : ['a', 'always'].includes(t) ? 'approve_session' : undefined;
    if (!decision) return this.out('type y (approve), n (deny) or a (approve for this session): ');
    try {
      this.service.decide({ toolCallId: cur.toolCallId, conversationId: this.conversationId, decision });
    } catch (err) {
      this.diag(`approval refused: ${(err as Error).message}`);
    }
  }

  private next() {
    const r = this.queue.shift();
    if (!r) return;
    this.current = r;
    const why = r.rule ? `permissions rule #${r.rule.index + 1} (${r.rule.tool}${r.rule.pattern !== undefined ? ` ${JSON.stringify(r.rule.pattern)}` : ''}) asks` : 'permissions.default is "ask"';
    const left = formatClock(Math.max(0, r.deadlineAt - Date.now()));
    this.out(`\n[approval] ${r.toolName}: ${r.summary}\n  (${why}; ${left} left, then it is denied)\n  run it? y = yes, n = no, a = yes, and for the rest of this session\n> `);
  }

  private out(s: string) {
    this.io.stderr.write(s);
  }
}

function formatClock(ms: number): string {
  const s = Math.ceil(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

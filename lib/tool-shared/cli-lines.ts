/**
 * What the builtins that talk to a `liveagent chat` terminal share (AskUserQuestion's answers,
 * the permissions plugin's approvals): the host's IO shape, one-line diagnostics, a JSON line
 * from stdin checked against a schema and the run's conversation, and stdin read only once
 * something waits for it (a run that needs nothing leaves stdin alone).
 */
import readline from 'node:readline';
import type { z } from 'zod';

/** The shape of `ChatIo` in hosts/cli/chat.ts (plugins may not import hosts). */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream;
}

export const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ');

/** `liveagent: <message>` on stderr, on one line. */
export const diagnostics = (io: CliIo) => (msg: string) => void io.stderr.write(`liveagent: ${oneLine(msg)}\n`);

/**
 * A stdin line as `schema` describes it, for this run's conversation; otherwise undefined after
 * one diagnostic `<what> ignored: …` (`expected` shows the shape when the line is not JSON).
 */
export function parseLine<T extends { conversation_id?: string | undefined }>(
  line: string,
  schema: z.ZodType<T>,
  o: { conversationId: string; what: string; expected: string; diag: (msg: string) => void },
): T | undefined {
  if (!line.trim()) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    o.diag(`${o.what} ignored: the line is not JSON (expected ${o.expected})`);
    return undefined;
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    o.diag(`${o.what} ignored: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`);
    return undefined;
  }
  if (r.data.conversation_id !== undefined && r.data.conversation_id !== o.conversationId) {
    o.diag(`${o.what} ignored: conversation_id "${r.data.conversation_id}" is not this run's conversation "${o.conversationId}"`);
    return undefined;
  }
  return r.data;
}

/** stdin lines, read from the first `start()` on; `ended` once stdin closed. */
export class LazyLineReader {
  private rl: readline.Interface | undefined;
  ended = false;

  constructor(
    private readonly io: CliIo,
    private readonly onLine: (line: string) => void,
    private readonly onEnd: () => void,
  ) {}

  start(): void {
    if (this.rl || !this.io.stdin) return;
    this.rl = readline.createInterface({ input: this.io.stdin, crlfDelay: Infinity, terminal: false });
    this.rl.on('line', this.onLine);
    this.rl.on('close', () => {
      this.ended = true;
      this.onEnd();
    });
  }

  close(): void {
    if (this.rl) {
      this.rl.removeAllListeners('close');
      this.rl.close();
    }
    // Without this a piped stdin keeps the process alive after the run has ended.
    this.io.stdin?.pause();
  }
}

/**
 * `liveagent conversations [--json] [--search TEXT] [--limit N]`: the stored conversations, most
 * recently updated first: id, updated time, message count and title. With --json, one object per
 * line (`id`, `title`, `createdAt`, `updatedAt` in epoch ms, `provider`, `model`, `messageCount`).
 *
 * Boots a kernel with only the history store (and the title plugin, whose `title` settings
 * section is then known rather than warned about): listing must not start MCP servers or load
 * providers.
 */
import { createKernel, type Kernel } from '../../core/kernel.js';
import historyPostgres from '../../plugins/history-postgres/index.js';
import historySqlite from '../../plugins/history-sqlite/index.js';
import { HISTORY_SERVICE, type ConversationSummary, type HistoryService } from '../../plugins/history-sqlite/service.js';
import title from '../../plugins/title/index.js';
import type { ConversationsArgs } from './args.js';
import type { ChatIo } from './chat.js';
import { EXIT } from './exit-codes.js';

export async function runConversations(args: ConversationsArgs, io: ChatIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let kernel: Kernel | undefined;
  try {
    kernel = await createKernel({ builtins: [historySqlite, historyPostgres, title], thirdParty: false });
    const history = kernel.services.get<HistoryService>(HISTORY_SERVICE);
    if (!history) throw new Error('the history store did not load');
    const items = await history.listConversations({ limit: args.limit, ...(args.search ? { search: args.search } : {}) });
    if (args.json) {
      for (const c of items) io.stdout.write(`${JSON.stringify(c)}\n`);
    } else if (items.length === 0) {
      io.stderr.write(args.search ? `no stored conversation matches "${args.search}"\n` : 'no stored conversations\n');
    } else {
      io.stdout.write(table(items));
    }
    return EXIT.ok;
  } finally {
    await kernel?.shutdown();
  }
}

/** One line per conversation: id, local updated time, message count, title. */
function table(items: ConversationSummary[]): string {
  const idWidth = Math.max(...items.map((c) => c.id.length));
  const countWidth = Math.max(...items.map((c) => String(c.messageCount).length));
  return items
    .map((c) => {
      const name = c.title ?? '(untitled)';
      return `${c.id.padEnd(idWidth)}  ${localTime(c.updatedAt)}  ${String(c.messageCount).padStart(countWidth)} msg  ${name.replace(/\s+/g, ' ')}\n`;
    })
    .join('');
}

function localTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

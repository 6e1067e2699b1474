/**
 * Export a whole conversation: every stored message (all pages, fetched with
 * `conversations.export`, not only those the transcript has loaded), as JSON (lossless: the
 * messages as stored) or as readable Markdown (roles, text, tool calls and results summarized,
 * attachments named).
 */
import type { ContentBlock, Message, ToolResultContent } from '../../../plugin-api.js';
import type { ReplyMap } from '../../../lib/gateway-protocol/protocol.js';
import { client } from '../api/client.js';

export interface ExportedConversation {
  conversation: { id: string; title?: string | null; createdAt?: number; updatedAt?: number; provider?: string | null; model?: string | null; [k: string]: unknown };
  /** Oldest first, as stored (with `ordinal`, `status`, `segmentId` from the history store). */
  messages: Array<Message & { ordinal?: number; status?: string }>;
}

type ExportPage = ReplyMap['conversations.export'];

const PAGE = 500;
/** A guard against a server that keeps saying hasMore without moving back. */
const MAX_PAGES = 10_000;

export async function fetchConversation(conversationId: string): Promise<ExportedConversation> {
  const pages: ExportPage[] = [];
  let before: number | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await client().request({ type: 'conversations.export', conversationId, limit: PAGE, ...(before !== undefined ? { before } : {}) });
    pages.unshift(page);
    if (!page.hasMore || !page.firstOrdinal || page.firstOrdinal === before) break;
    before = page.firstOrdinal;
  }
  // The newest page's conversation row is the current one.
  return { conversation: pages[pages.length - 1]!.conversation, messages: pages.flatMap((p) => p.messages) };
}

export function toJson(c: ExportedConversation): string {
  return `${JSON.stringify({ format: 'liveagent-conversation', version: 1, exportedAt: new Date().toISOString(), ...c }, null, 2)}\n`;
}

const ROLE: Record<Message['role'], string> = { user: 'User', assistant: 'Assistant', tool: 'Tool results' };
const RESULT_LINES = 12;

function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${lang}\n${text.replace(/\n$/, '')}\n${ticks}`;
}

function clip(text: string, lines = RESULT_LINES): string {
  const all = text.split('\n');
  return all.length <= lines ? text : `${all.slice(0, lines).join('\n')}\n… (${all.length - lines} more lines)`;
}

function resultText(content: ToolResultContent[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mimeType}]`)).join('\n');
}

function blockMarkdown(b: ContentBlock): string | null {
  switch (b.type) {
    case 'text':
      return b.text.trim() ? b.text : null;
    case 'thinking':
      return b.redacted || !b.thinking.trim() ? null : `<details><summary>Thinking</summary>\n\n${b.thinking}\n\n</details>`;
    case 'tool_call':
      return `**Tool call: ${b.name}**\n\n${fence(JSON.stringify(b.input, null, 2), 'json')}`;
    case 'tool_result':
      return `**${b.isError ? 'Error' : 'Result'} of ${b.toolName}**\n\n${fence(clip(resultText(b.content)))}`;
    case 'image':
      return `*[image${b.path ? `: ${b.path}` : ''} (${b.mimeType})]*`;
    case 'attachment':
      return `*[attachment: ${b.name} (${b.mediaType})]*`;
    case 'document':
      return `*[document${b.name ? `: ${b.name}` : ''} (${b.mimeType})]*`;
    case 'hosted_search':
      return `*[web search: ${b.queries.join('; ') || 'no query'}; ${b.sources.length} source${b.sources.length === 1 ? '' : 's'}]*`;
    default:
      return null;
  }
}

export function toMarkdown(c: ExportedConversation): string {
  const title = c.conversation.title || 'Untitled conversation';
  const out = [`# ${title}`, ''];
  const facts = [
    c.conversation.createdAt ? `Started ${new Date(c.conversation.createdAt).toLocaleString()}` : '',
    c.conversation.model ? `model ${c.conversation.provider ? `${c.conversation.provider}/` : ''}${c.conversation.model}` : '',
    `${c.messages.length} message${c.messages.length === 1 ? '' : 's'}`,
  ].filter(Boolean);
  out.push(`*${facts.join(' · ')}*`, '');
  for (const m of c.messages) {
    const parts = m.content.map(blockMarkdown).filter((p): p is string => p !== null);
    if (m.errorMessage) parts.push(`> Error: ${m.errorMessage}`);
    if (m.editedFiles?.length) parts.push(`Files changed: ${m.editedFiles.map((f) => `\`${f.path}\` (${f.action})`).join(', ')}`);
    if (!parts.length) continue;
    out.push(`## ${ROLE[m.role]}`, '', parts.join('\n\n'), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** A file name from the title: letters, digits and dashes. */
export function exportFileName(c: ExportedConversation, ext: 'md' | 'json'): string {
  const slug = (c.conversation.title ?? '').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60);
  return `${slug || c.conversation.id}.${ext}`;
}

export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export async function exportConversation(conversationId: string, format: 'md' | 'json'): Promise<void> {
  const c = await fetchConversation(conversationId);
  if (format === 'json') download(exportFileName(c, 'json'), toJson(c), 'application/json');
  else download(exportFileName(c, 'md'), toMarkdown(c), 'text/markdown');
}

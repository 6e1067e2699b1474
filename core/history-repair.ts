/**
 * Makes stored history valid to send again. A process killed between a tool call and its result
 * leaves a dangling call; providers reject such a history, so every call without a result gets
 * a synthetic error result right after its assistant message.
 */
import type { Message, ToolCallBlock, ToolResultBlock } from '../plugin-api.js';

export const INTERRUPTED_RESULT_TEXT = 'Tool call was interrupted before it returned a result (the run stopped or the process ended).';

export function repairHistory(messages: Message[]): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    out.push(m);
    if (m.role !== 'assistant') continue;
    const calls = m.content.filter((b): b is ToolCallBlock => b.type === 'tool_call');
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(next?.role === 'tool' ? next.content.filter((b): b is ToolResultBlock => b.type === 'tool_result').map((b) => b.toolCallId) : []);
    const missing = calls.filter((c) => !answered.has(c.id));
    if (missing.length === 0) continue;
    const synthetic: ToolResultBlock[] = missing.map((c) => ({
      type: 'tool_result',
      toolCallId: c.id,
      toolName: c.name,
      content: [{ type: 'text', text: INTERRUPTED_RESULT_TEXT }],
      isError: true,
      details: { synthetic: true },
    }));
    if (next?.role === 'tool') {
      out.push({ ...next, content: [...next.content, ...synthetic] });
      i++;
    } else {
      out.push({ id: `${m.id}-repair`, role: 'tool', content: synthetic, createdAt: m.createdAt });
    }
  }
  return out;
}

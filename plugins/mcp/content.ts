/**
 * MCP tool results → our tool results. Models take text and images in tool results; the other
 * MCP content kinds become text that says what they were, so nothing is silently dropped.
 */
import type { JsonObject, ToolResult, ToolResultContent } from '../../plugin-api.js';
import { base64Bytes } from './result-limits.js';

/** The parts of an MCP CallToolResult we read (the SDK's type is wider). */
export interface McpCallResult {
  content?: unknown;
  isError?: boolean;
  structuredContent?: unknown;
  /** Results of protocol version 2024-10-07 and older. */
  toolResult?: unknown;
}

type McpBlock = { type?: unknown; [key: string]: unknown };

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/**
 * A server-given name, URI or type inside one of our `[...]` markers: on one line and short, so
 * it cannot end the marker and fake a line of its own (the bodies are the tool's output, as is).
 */
function field(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const one = v.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
  return one.length > 500 ? `${one.slice(0, 500)}…` : one;
}

function mapBlock(b: McpBlock): ToolResultContent {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: str(b.text) ?? '' };
    case 'image':
      if (typeof b.data === 'string' && typeof b.mimeType === 'string') return { type: 'image', mimeType: b.mimeType, data: b.data };
      return { type: 'text', text: '[image without data]' };
    case 'audio': {
      const size = typeof b.data === 'string' ? `, ${base64Bytes(b.data)} bytes` : '';
      return { type: 'text', text: `[audio: ${field(b.mimeType) ?? 'unknown type'}${size}; audio is not shown to the model]` };
    }
    case 'resource': {
      const r = (b.resource ?? {}) as Record<string, unknown>;
      const uri = field(r.uri) ?? '(no uri)';
      if (typeof r.text === 'string') return { type: 'text', text: `[resource: ${uri}]\n${r.text}` };
      const mime = field(r.mimeType);
      if (typeof r.blob === 'string' && mime?.startsWith('image/')) return { type: 'image', mimeType: mime, data: r.blob };
      const size = typeof r.blob === 'string' ? `, ${base64Bytes(r.blob)} bytes` : '';
      return { type: 'text', text: `[resource: ${uri} (${mime ?? 'binary'}${size})]` };
    }
    case 'resource_link': {
      const name = field(b.title) ?? field(b.name);
      const desc = str(b.description);
      const mime = field(b.mimeType);
      return { type: 'text', text: `[resource link: ${name ? `${name} ` : ''}<${field(b.uri) ?? '(no uri)'}>${mime ? ` (${mime})` : ''}]${desc ? `\n${desc}` : ''}` };
    }
    default:
      return { type: 'text', text: JSON.stringify(b) };
  }
}

function asJsonObject(v: unknown): JsonObject | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  try {
    return JSON.parse(JSON.stringify(v)) as JsonObject;
  } catch {
    return undefined;
  }
}

/** Map a result; `details.mcp` names the server and tool, `details.structuredContent` keeps the structured output. */
export function mapCallResult(result: McpCallResult, server: string, tool: string): ToolResult {
  const details: JsonObject = { mcp: { server, tool } };
  let content: ToolResultContent[];
  if (Array.isArray(result.content)) {
    content = result.content.filter((b): b is McpBlock => !!b && typeof b === 'object').map(mapBlock);
  } else if ('toolResult' in result) {
    content = [{ type: 'text', text: typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult) ?? '' }];
  } else {
    content = [];
  }
  const structured = asJsonObject(result.structuredContent);
  if (structured) {
    details.structuredContent = structured;
    // Servers should mirror structured output as text; when one does not, the model still sees it.
    if (!content.length) content.push({ type: 'text', text: JSON.stringify(structured) });
  }
  if (!content.length) content.push({ type: 'text', text: result.isError ? '(the tool failed without a message)' : '(no output)' });
  return { content, ...(result.isError ? { isError: true } : {}), details };
}

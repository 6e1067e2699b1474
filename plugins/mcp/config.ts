/**
 * Settings of the MCP plugin. Servers live under `mcpServers` in the shape Claude Desktop and
 * Claude Code use; the plugin-wide timings live under the top-level `mcp` section.
 *
 * Each server entry is validated on its own, so one bad entry fails only that server (with an
 * error naming it and the field) while the others start.
 */
import { z } from 'zod';

/**
 * What the kernel validates for `settingsKey: 'mcpServers'`: only that it is an object of
 * entries. Entries are checked one by one in {@link parseServerEntry}.
 */
export const McpServersSettingsSchema = z.record(z.string(), z.unknown());

const StringMap = z.record(z.string(), z.string());

const StdioEntrySchema = z
  .object({
    type: z.literal('stdio').optional(),
    command: z.string().min(1, 'must not be empty'),
    args: z.array(z.string()).optional(),
    env: StringMap.optional(),
    cwd: z.string().min(1, 'must not be empty').optional(),
  })
  // Configs copied from other clients carry keys we do not use; they are not errors.
  .loose();

const HttpEntrySchema = z
  .object({
    type: z.enum(['http', 'streamable-http', 'sse']).optional(),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    headers: StringMap.optional(),
  })
  .loose();

export type ServerConfig =
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  /** `sseOnly` when the entry says `type: "sse"`; otherwise Streamable HTTP, falling back to SSE. */
  | { kind: 'http'; url: string; headers?: Record<string, string>; sseOnly: boolean };

export type ParsedEntry = { ok: true; config: ServerConfig } | { ok: false; error: string };

function fieldPath(name: string, path: ReadonlyArray<PropertyKey>): string {
  const server = /^[A-Za-z0-9_-]+$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
  return `mcpServers${server}${path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}`;
}

/** Validate one `mcpServers` entry; the error names the server and the field. */
export function parseServerEntry(name: string, raw: unknown): ParsedEntry {
  const r = checkEntry(name, raw);
  if ('problem' in r) return { ok: false, error: name.trim() ? `${fieldPath(name, r.problem.path)}: ${r.problem.message}` : `mcpServers: ${r.problem.message}` };
  return { ok: true, config: r.config };
}

/**
 * What a save that changes `mcpServers` must pass (Plugin.settingsWriteSchema): every entry
 * valid, so a bad one is refused before it is stored (at boot it would fail only its server).
 */
export const McpServersWriteSchema = McpServersSettingsSchema.superRefine((servers, ctx) => {
  for (const [name, raw] of Object.entries(servers)) {
    const r = checkEntry(name, raw);
    if ('problem' in r) ctx.addIssue({ code: 'custom', path: name.trim() ? [name, ...r.problem.path] : [], message: r.problem.message });
  }
});

type Checked = { config: ServerConfig } | { problem: { path: PropertyKey[]; message: string } };

function checkEntry(name: string, raw: unknown): Checked {
  if (!name.trim()) return { problem: { path: [], message: 'a server name must not be empty' } };
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { problem: { path: [], message: 'must be an object' } };
  const entry = raw as Record<string, unknown>;
  const isHttp = 'url' in entry || entry.type === 'http' || entry.type === 'sse' || entry.type === 'streamable-http';
  if (!isHttp && !('command' in entry)) return { problem: { path: [], message: 'needs "command" (a stdio server) or "url" (an HTTP server)' } };
  if (isHttp) {
    const r = HttpEntrySchema.safeParse(entry);
    if (!r.success) return { problem: { path: [...r.error.issues[0]!.path], message: r.error.issues[0]!.message } };
    return { config: { kind: 'http', url: r.data.url, ...(r.data.headers ? { headers: r.data.headers } : {}), sseOnly: r.data.type === 'sse' } };
  }
  const r = StdioEntrySchema.safeParse(entry);
  if (!r.success) return { problem: { path: [...r.error.issues[0]!.path], message: r.error.issues[0]!.message } };
  return { config: { kind: 'stdio', command: r.data.command, args: r.data.args ?? [], ...(r.data.env ? { env: r.data.env } : {}), ...(r.data.cwd ? { cwd: r.data.cwd } : {}) } };
}

/** The top-level `mcp` section. Every wait is configurable so tests run in seconds. */
export const McpOptionsSchema = z
  .object({
    /** First wait before restarting a lost server (ms); doubles per consecutive attempt. */
    restartBaseDelayMs: z.number().int().min(0).default(1000),
    /** Longest wait between restarts (ms). A connection that stays up this long resets the budget. */
    restartMaxDelayMs: z.number().int().min(0).default(30_000),
    /** Consecutive failed (re)connections before the server is marked failed. */
    maxRestarts: z.number().int().min(0).default(5),
    /** Spawn/connect + initialize + first tools/list must finish within this (ms). */
    connectTimeoutMs: z.number().int().min(1).default(30_000),
    /** A tool call is cancelled after this long (ms). */
    callTimeoutMs: z.number().int().min(1).default(300_000),
    /** On close, a stdio server gets this long (ms) to exit after its stdin ends, then SIGTERM. */
    shutdownGraceMs: z.number().int().min(0).default(2000),
    /**
     * A tool-mode request made while servers are still making their first connection waits up
     * to this long (ms) for them, so a run started right at boot (the CLI) sees their tools.
     * Later requests never wait; 0 turns the wait off.
     */
    firstRequestWaitMs: z.number().int().min(0).default(10_000),
    /**
     * UTF-8 bytes of text one tool result keeps (its head and its tail, with a marker where the
     * middle was left out). About 25k tokens: a result goes into every later request.
     */
    maxResultBytes: z.number().int().min(1024).default(100_000),
    /** Decoded bytes of one image in a result; a larger one becomes a text note (3.75 MB is 5 MB of base64, Anthropic's limit). */
    maxImageBytes: z.number().int().min(1024).default(3_750_000),
    /**
     * Longest reply a stdio server may send in one message (the SDK's read buffer, 10 MiB by
     * default). A longer one resets the connection; the call fails saying so and the server restarts.
     */
    maxReplyBytes: z.number().int().min(64 * 1024).default(10 * 1024 * 1024),
  })
  .strict();

export type McpOptions = z.infer<typeof McpOptionsSchema>;

export const DEFAULT_OPTIONS: McpOptions = McpOptionsSchema.parse({});

/** Parse the `mcp` section; a bad one keeps the defaults and says which field is wrong. */
export function parseOptions(raw: unknown): { options: McpOptions; error?: string } {
  const r = McpOptionsSchema.safeParse(raw ?? {});
  if (r.success) return { options: r.data };
  const i = r.error.issues[0]!;
  const where = ['mcp', ...i.path.map(String)].join('.');
  return { options: DEFAULT_OPTIONS, error: `${where}: ${i.message} (using the defaults for the mcp section)` };
}

/**
 * The `gateway` settings section (settings.json → `gateway`). Every limit and interval is here so
 * tests can shrink them; the gateway re-reads the section whenever settings change.
 */
import { z } from 'zod';
import { MAX_PAGE_MESSAGES } from '../../lib/gateway-protocol/protocol.js';

const MiB = 1024 * 1024;

const origin = z
  .string()
  .refine((v) => v === '*' || /^https?:\/\/[^/\s]+$/i.test(v), 'must be "*" or an origin like https://example.com (scheme and host, no path)');
const hostName = z.string().regex(/^(\*|[A-Za-z0-9.[\]:_-]{1,255})$/, 'must be "*" or a host name (no scheme, no path)');

export const GatewaySettingsSchema = z.strictObject({
  /** Extra origins allowed to open a socket, besides the server's own and localhost names ("*": any). */
  allowedOrigins: z.array(origin).default([]),
  /** Extra Host header names accepted, besides localhost names and the bound address ("*": any). */
  allowedHosts: z.array(hostName).default([]),
  /** Largest client frame accepted (bytes). Applies to sockets opened after a change. */
  maxPayloadBytes: z.number().int().min(1024).max(1024 * MiB).default(64 * MiB),
  /**
   * Bytes a client may have outstanding (handed to its socket, not yet written out) before it is
   * dropped. Keep it above the largest message a reply can carry: a reading client is never behind by more.
   */
  maxClientBufferBytes: z.number().int().min(1024).default(16 * MiB),
  /**
   * Bytes outstanding for all clients together. Past it the clients furthest behind are dropped
   * (as one over its own cap is) until the total is back under it.
   */
  maxTotalBufferBytes: z.number().int().min(1024).default(256 * MiB),
  /** Ping interval; a socket that missed the previous pong is dropped. */
  heartbeatIntervalMs: z.number().int().min(10).default(30_000),
  /** Events kept per conversation for replay to a reconnecting client. */
  replayWindow: z.number().int().min(0).max(1_000_000).default(2000),
  /** Byte bound of the same window (the serialized events). */
  replayWindowBytes: z.number().int().min(0).default(8 * MiB),
  /**
   * Byte budget of every replay window together. Past it the least recently active
   * conversations lose their oldest events first, down to 7/8 of the budget (so a full budget
   * does not trim on every event).
   */
  replayTotalBytes: z.number().int().min(0).default(64 * MiB),
  /**
   * A run starting with nobody subscribed still records its replay window when a client left
   * the conversation this recently (ms): it is likely reconnecting, and replay beats a snapshot.
   */
  replayGraceMs: z.number().int().min(0).default(120_000),
  /** Messages in a snapshot (the newest page of history); older pages are loaded with `conversations.load { before }`. */
  snapshotMessages: z.number().int().min(1).max(MAX_PAGE_MESSAGES).default(100),
  /** Conversations with no subscriber and no run whose replay state is kept (least recently active go first). */
  maxIdleConversations: z.number().int().min(0).default(200),
  /** How many conversations a list (and the list broadcast after a change) holds. */
  conversationListLimit: z.number().int().min(1).max(500).default(200),
  /** Delay that coalesces conversation-list broadcasts after runs start and end. */
  listBroadcastDelayMs: z.number().int().min(0).default(100),
});

export type GatewaySettings = z.infer<typeof GatewaySettingsSchema>;

/** Parse the section; the error names the field as `gateway.<field>` (and the nearest known key, for a misspelt one). */
export function parseGatewaySettings(value: unknown): { ok: true; settings: GatewaySettings } | { ok: false; error: string } {
  const r = GatewaySettingsSchema.safeParse(value ?? {});
  if (r.success) return { ok: true, settings: r.data };
  const i = r.error.issues[0]!;
  const where = ['gateway', ...i.path.map(String)].join('.');
  const near = i.code === 'unrecognized_keys' && i.path.length === 0 && i.keys.length === 1 ? nearest(i.keys[0]!, Object.keys(GatewaySettingsSchema.shape)) : undefined;
  return { ok: false, error: `settings: ${where}: ${i.message}${near ? ` (did you mean "${near}"?)` : ''}` };
}

/** The candidate within a few edits of `key` (case-insensitive Levenshtein), if any. Kept local: plugins do not import the kernel. */
function nearest(key: string, candidates: string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
  const distance = (a: string, b: string) => {
    let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const row = [i];
      for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row;
    }
    return prev[b.length]!;
  };
  let best: { key: string; d: number } | undefined;
  for (const c of candidates) {
    const d = distance(key.toLowerCase(), c.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { key: c, d };
  }
  return best?.key;
}

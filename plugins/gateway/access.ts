/**
 * Who may open a gateway socket: the token (query `?token=` or subprotocol
 * `liveagent.token.<token>`), the Host header (against DNS rebinding) and the Origin header
 * (against other web pages). Everything is decided before the upgrade, so a refused request
 * never becomes a WebSocket. Tokens are compared in constant time and never logged.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';

export const TOKEN_FILE = 'gateway-token';
export const TOKEN_PROTOCOL_PREFIX = 'liveagent.token.';
/** The subprotocol the server selects when a client offers it (browsers require one to be selected). */
export const APP_PROTOCOL = 'liveagent.v1';

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,256}$/;

/**
 * The token stored under `<home>/gateway-token` (mode 0600), created on first use. Reusing it
 * keeps a bookmarked URL working across restarts; delete the file to rotate it.
 */
export function loadOrCreateToken(home: string): string {
  const file = path.join(home, TOKEN_FILE);
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (TOKEN_PATTERN.test(existing)) {
      // Tighten a file someone loosened: the token is a password.
      if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
      return existing;
    }
  } catch {
    /* missing or unreadable: make a new one */
  }
  const token = randomBytes(32).toString('base64url');
  fs.mkdirSync(home, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return token;
}

/** Constant-time comparison: hashing first makes the lengths equal, so length leaks nothing either. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/** The token a request carries, from the query or a subprotocol. */
export function tokenFromRequest(req: IncomingMessage): string | undefined {
  const url = new URL(req.url ?? '/', 'http://x');
  const q = url.searchParams.get('token');
  if (q) return q;
  const header = req.headers['sec-websocket-protocol'];
  if (typeof header === 'string') {
    for (const p of header.split(',')) {
      const t = p.trim();
      if (t.startsWith(TOKEN_PROTOCOL_PREFIX)) return t.slice(TOKEN_PROTOCOL_PREFIX.length);
    }
  }
  return undefined;
}

/** The token of an `Authorization: Bearer <token>` header (how HTTP routes take it: never from the URL, which logs keep). */
export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  return m?.[1];
}

export interface AccessPolicy {
  token: string;
  /** The address the server is bound to (adds itself, or every local interface for 0.0.0.0 / ::). */
  bindHost?: string;
  allowedOrigins: string[];
  allowedHosts: string[];
}

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

function isLocalName(host: string): boolean {
  const h = host.toLowerCase();
  return LOCAL_NAMES.has(h) || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** `example.com:80` → `example.com`; `[::1]:80` → `[::1]`. */
function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.indexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

function bindNames(bindHost: string | undefined): Set<string> {
  const names = new Set<string>();
  if (!bindHost) return names;
  const b = bindHost.toLowerCase();
  if (b === '0.0.0.0' || b === '::' || b === '[::]') {
    for (const list of Object.values(os.networkInterfaces())) {
      for (const a of list ?? []) names.add(a.family === 'IPv6' ? `[${a.address.toLowerCase()}]` : a.address);
    }
    names.add(os.hostname().toLowerCase());
  } else {
    names.add(b.includes(':') && !b.startsWith('[') ? `[${b}]` : b);
  }
  return names;
}

/** The Host header names a local name, the bound address, or a configured host (DNS rebinding guard). */
export function isHostAllowed(hostHeader: string | undefined, bindHost: string | undefined, allowedHosts: string[]): boolean {
  if (!hostHeader) return false;
  const host = hostnameOf(hostHeader);
  return allowedHosts.includes('*') || isLocalName(host) || bindNames(bindHost).has(host) || allowedHosts.some((h) => hostnameOf(h) === host);
}

/** Why a connection was refused, for the aggregated log. */
export type RefusalKind = 'host' | 'origin' | 'token';

export type AccessDecision = { ok: true } | { ok: false; status: 401 | 403; reason: string; kind: RefusalKind };

/** Decide an upgrade request (or an HTTP route's, with the token it gives). Host and Origin first (403), then the token (401). */
export function checkAccess(req: IncomingMessage, policy: AccessPolicy, given: string | undefined | null = tokenFromRequest(req)): AccessDecision {
  const hostHeader = req.headers.host;
  if (!hostHeader) return { ok: false, status: 403, reason: 'missing Host header', kind: 'host' };
  if (!isHostAllowed(hostHeader, policy.bindHost, policy.allowedHosts)) return { ok: false, status: 403, reason: 'Host not allowed', kind: 'host' };

  const origin = req.headers.origin;
  // Non-browser clients send no Origin; browsers always do on a WebSocket upgrade.
  if (origin !== undefined) {
    let ok = policy.allowedOrigins.includes('*') || policy.allowedOrigins.some((o) => o.toLowerCase() === origin.toLowerCase());
    if (!ok && origin !== 'null') {
      try {
        const u = new URL(origin);
        const http = u.protocol === 'http:' || u.protocol === 'https:';
        // Same origin as the page this server served, or a localhost page (a dev server).
        ok = http && (u.host.toLowerCase() === hostHeader.trim().toLowerCase() || isLocalName(u.hostname));
      } catch {
        ok = false;
      }
    }
    if (!ok) return { ok: false, status: 403, reason: 'Origin not allowed', kind: 'origin' };
  }

  // null: the caller checks Host and Origin only (a CORS preflight carries no credentials).
  if (given === null) return { ok: true };
  if (!given || !tokensEqual(given, policy.token)) return { ok: false, status: 401, reason: 'missing or wrong token', kind: 'token' };
  return { ok: true };
}

const STATUS_TEXT: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' };

/** Refuse on the raw socket, before any upgrade. */
export function refuse(socket: Duplex, status: number, reason: string): void {
  const text = STATUS_TEXT[status] ?? 'Bad Request';
  const body = `${reason}\n`;
  if (!socket.writable) return void socket.destroy();
  // end() so the response is flushed before the socket goes.
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

const KIND_LABEL: Record<RefusalKind, string> = { token: 'bad token', origin: 'origin', host: 'host' };
/** Distinct addresses counted per summary; past it the count reads "1000+" (memory stays bounded under a flood). */
const MAX_ADDRESSES = 1000;

/** The default gap between two summary lines of refused connections. */
export const DEFAULT_REFUSAL_LOG_INTERVAL_MS = 60_000;

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s` : `${Math.round(ms / 1000)} s`;
}

/**
 * The log of refused connections, rate-limited: a scanner or a page with a stale token can try
 * thousands of times a minute, and one warning each would drown the log (and fill the disk).
 * The first refusal after a quiet interval is logged in full; the ones after it are counted by
 * kind and address, and at most one summary line per interval says how many there were. An
 * interval without refusals ends the burst, so the next one is logged in full again.
 */
export class RefusalLog {
  private burst: { since: number; total: number; kinds: Map<RefusalKind, number>; addresses: Set<string> } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly warn: (line: string) => void,
    /** Read at each interval, so a change applies to the next one. */
    private readonly intervalMs: () => number = () => DEFAULT_REFUSAL_LOG_INTERVAL_MS,
  ) {}

  /** One refused connection. `remote` is the peer address (never the URL or headers: they may carry the token). */
  record(kind: RefusalKind, reason: string, remote: string | undefined): void {
    if (!this.burst) {
      this.warn(`refused a gateway connection from ${remote ?? 'unknown'}: ${reason}`);
      this.burst = { since: Date.now(), total: 0, kinds: new Map(), addresses: new Set() };
      this.arm();
      return;
    }
    const b = this.burst;
    b.total++;
    b.kinds.set(kind, (b.kinds.get(kind) ?? 0) + 1);
    if (b.addresses.size < MAX_ADDRESSES) b.addresses.add(remote ?? 'unknown');
  }

  /** Write the pending summary, if any, and stop the timer (the gateway is closing). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
    this.burst = undefined;
  }

  private arm(): void {
    this.timer = setTimeout(() => this.tick(), Math.max(1, this.intervalMs()));
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.flush()) {
      this.burst = undefined;
      return;
    }
    this.arm();
  }

  /** Log the counted refusals and start a new count; false when there were none. */
  private flush(): boolean {
    const b = this.burst;
    if (!b || b.total === 0) return false;
    const kinds = [...b.kinds].sort((x, y) => y[1] - x[1]).map(([k, n]) => `${KIND_LABEL[k]}: ${n}`).join(', ');
    const from = b.addresses.size >= MAX_ADDRESSES ? `${MAX_ADDRESSES}+ addresses` : b.addresses.size === 1 ? `1 address` : `${b.addresses.size} addresses`;
    this.warn(`refused ${b.total} more gateway connection${b.total === 1 ? '' : 's'} in the last ${seconds(Date.now() - b.since)} (${kinds}; from ${from})`);
    this.burst = { since: Date.now(), total: 0, kinds: new Map(), addresses: new Set() };
    return true;
  }
}

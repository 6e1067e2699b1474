/**
 * The `mcpServers` settings block as the settings page edits it: JSON text checked before it is
 * saved, and how the saved block compares with the servers the host is running. The entry rules
 * mirror the MCP plugin's (plugins/mcp/config.ts), which the WebUI cannot import: a bad entry
 * would be stored and then fail its server, so it is caught here, with the same wording.
 */
import type { McpServerSummary } from '../../../lib/gateway-protocol/protocol.js';

export type McpServersCheck = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const isStringMap = (v: unknown) => isObj(v) && Object.values(v).every((x) => typeof x === 'string');

function fieldPath(name: string, field?: string): string {
  const server = /^[A-Za-z0-9_-]+$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
  return `mcpServers${server}${field ? `.${field}` : ''}`;
}

/** The text shown for a stored block: `{}` when there is none. */
export function formatMcpServers(value: unknown): string {
  return isObj(value) && Object.keys(value).length ? JSON.stringify(value, null, 2) : '{}';
}

/**
 * Where JSON text first goes wrong (its length when it ends early): JSON.parse does not always
 * say (`Unexpected token 'x', ..."a": x }" is not valid JSON`). A strict recursive descent.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const expect = (c: string) => (text[i] === c ? i++ : fail());
  const string = () => {
    expect('"');
    while (i < text.length && text[i] !== '"') {
      if (text[i]! < ' ') fail();
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) (i += k), fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x')) fail();
      }
      i++;
    }
    expect('"');
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      ws();
      if (text[i] === close) return void i++;
      for (;;) {
        if (c === '{') {
          ws();
          string();
          ws();
          expect(':');
        }
        value();
        ws();
        if (text[i] === ',') i++;
        else return void expect(close);
      }
    }
    if (c === '"') return string();
    // A literal fails at its first wrong letter, as the engine reports it.
    const word = c === 't' ? 'true' : c === 'f' ? 'false' : c === 'n' ? 'null' : '';
    if (word) {
      for (const ch of word) expect(ch);
      return;
    }
    const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i));
    if (!m) fail();
    i += m![0].length;
  };
  try {
    value();
    ws();
    return i < text.length ? i : -1;
  } catch (at) {
    return typeof at === 'number' ? at : 0;
  }
}

/** A JSON.parse message with the line and column where the text goes wrong. */
function jsonError(text: string, err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  const at = jsonErrorOffset(text);
  if (at < 0) return raw;
  // Engines word the place differently (a position, a line, an echo of the text): say it once, our way.
  const msg = raw
    .replace(/, (?:\.\.\.)?".*" is not valid JSON$/s, '')
    .replace(/(?: in JSON)? at position \d+/, '')
    .replace(/ \(line \d+ column \d+\)/, '');
  const before = text.slice(0, at);
  const where = `line ${before.split('\n').length} column ${at - before.lastIndexOf('\n')}`;
  return at >= text.trimEnd().length ? `${msg} (at ${where}: a closing bracket, brace or quote is missing)` : `${msg} (${where})`;
}

/** One entry, by the MCP plugin's rules; null when it is fine. */
function entryError(name: string, raw: unknown): string | null {
  if (!name.trim()) return 'mcpServers: a server name must not be empty';
  if (!isObj(raw)) return `${fieldPath(name)}: must be an object`;
  const isHttp = 'url' in raw || raw.type === 'http' || raw.type === 'sse' || raw.type === 'streamable-http';
  if (!isHttp && !('command' in raw)) return `${fieldPath(name)}: needs "command" (a stdio server) or "url" (an HTTP server)`;
  if (isHttp) {
    let ok = false;
    try {
      ok = typeof raw.url === 'string' && /^https?:$/.test(new URL(raw.url).protocol);
    } catch {
      ok = false;
    }
    if (!ok) return `${fieldPath(name, 'url')}: must be an http(s) URL`;
    if (raw.headers !== undefined && !isStringMap(raw.headers)) return `${fieldPath(name, 'headers')}: must be an object of strings`;
    return null;
  }
  if (raw.type !== undefined && raw.type !== 'stdio') return `${fieldPath(name, 'type')}: must be "stdio", "http", "streamable-http" or "sse"`;
  if (typeof raw.command !== 'string' || !raw.command.trim()) return `${fieldPath(name, 'command')}: must be a non-empty string`;
  if (raw.args !== undefined && !(Array.isArray(raw.args) && raw.args.every((a) => typeof a === 'string'))) {
    return `${fieldPath(name, 'args')}: must be an array of strings`;
  }
  if (raw.env !== undefined && !isStringMap(raw.env)) return `${fieldPath(name, 'env')}: must be an object of strings`;
  if (raw.cwd !== undefined && (typeof raw.cwd !== 'string' || !raw.cwd.trim())) return `${fieldPath(name, 'cwd')}: must be a non-empty string`;
  return null;
}

/**
 * Check the editor's text. Accepts the bare block (`{ "fs": { ... } }`) and, since configs are
 * copied from Claude Desktop's file whole, one wrapped in `{ "mcpServers": { ... } }`.
 */
export function parseMcpServers(text: string): McpServersCheck {
  if (!text.trim()) return { ok: true, value: {} };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `mcpServers is not valid JSON: ${jsonError(text, err)}` };
  }
  if (!isObj(raw)) return { ok: false, error: 'mcpServers must be a JSON object: { "name": { "command": "…" } }' };
  const keys = Object.keys(raw);
  // Unwrapped only when the inner object is not itself a server entry (a server may be named so).
  const inner = raw.mcpServers;
  const wrapped = keys.length === 1 && isObj(inner) && !('command' in inner || 'url' in inner || 'type' in inner);
  const value = wrapped ? (inner as Obj) : raw;
  for (const [name, entry] of Object.entries(value)) {
    const error = entryError(name, entry);
    if (error) return { ok: false, error };
  }
  return { ok: true, value };
}

export interface McpPending {
  /** In the saved settings, not in the host's list yet: starting. */
  added: string[];
  /** In the host's list, no longer saved: stopping. */
  removed: string[];
}

/** How the saved `mcpServers` differs from the servers the host reported last (the moment between a save and the host's next `mcp` broadcast). */
export function pendingChanges(saved: unknown, running: McpServerSummary[]): McpPending {
  const savedNames = isObj(saved) ? Object.keys(saved) : [];
  const runningNames = new Set(running.map((s) => s.name));
  return {
    added: savedNames.filter((n) => !runningNames.has(n)),
    removed: [...runningNames].filter((n) => !savedNames.includes(n)),
  };
}

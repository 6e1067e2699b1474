/**
 * Shared by the gateway integration tests: boot the server host with the fake provider in a temp
 * home, and a real `ws` client that validates every frame it receives with the protocol schemas.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WebSocket } from 'ws';
import type { LifecycleEvent, Plugin, Provider, ProviderEvent, Settings } from '../../plugin-api.js';
import { startServer, type RunningServer } from '../../hosts/server/start-server.js';
import { parseServerFrame, type ServerMessage } from '../../lib/gateway-protocol/protocol.js';
import type { GatewayHostService as GatewayService } from '../../plugins/gateway/index.js';
import { fakeProvider, type FakeStep } from '../helpers/fake-provider.js';

export type StreamMessage = Extract<ServerMessage, { event: LifecycleEvent }>;
export type Reply = Extract<ServerMessage, { type: 'reply' }>;

/** A gate that holds a provider stream before a given event until released. */
export interface Gate {
  /** Provider request index (0-based) to hold. */
  request: number;
  before: ProviderEvent['type'];
  release(): void;
  released: Promise<void>;
  /** Resolves once the stream is parked at the gate. */
  reached: Promise<void>;
  markReached(): void;
}

export function gate(request: number, before: ProviderEvent['type'] = 'done'): Gate {
  let release!: () => void;
  let markReached!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (markReached = r));
  return { request, before, release, released, reached, markReached };
}

/** The fake provider, with optional gates that hold chosen requests (to keep a run active on purpose). */
export function gatedProvider(steps: FakeStep[] | Parameters<typeof fakeProvider>[0], gates: Gate[] = []) {
  const inner = fakeProvider(steps);
  const provider: Provider & { requests: typeof inner.requests } = {
    ...inner,
    requests: inner.requests,
    async *stream(request, signal) {
      const index = inner.requests.length;
      for await (const ev of inner.stream(request, signal)) {
        const g = gates.find((x) => x.request === index && x.before === ev.type);
        if (g) {
          g.markReached();
          await Promise.race([g.released, new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
          if (signal.aborted) {
            yield { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } };
            return;
          }
        }
        yield ev;
      }
    },
  };
  return provider;
}

/** A tool that takes any arguments and answers `ok` (the gateway tests only need a round trip). */
export const okTool: Plugin = {
  name: 'tool-echo',
  apply: (ctx) =>
    void ctx.registerTool({
      name: 'Echo',
      description: 'echo',
      parameters: { safeParse: (v: unknown) => ({ success: true, data: v }) },
      jsonSchema: { type: 'object' },
      execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
    }),
};

export interface Booted {
  server: RunningServer;
  provider: ReturnType<typeof gatedProvider>;
  home: string;
  wsUrl: string;
  gateway: GatewayService;
  lines: string[];
}

const servers: Array<{ server: RunningServer; home: string; clients: TestClient[] }> = [];

export async function boot(opts: { steps?: Parameters<typeof fakeProvider>[0]; gates?: Gate[]; settings?: Settings; extra?: Plugin[]; webuiDir?: string } = {}): Promise<Booted> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'la-gw-'));
  const provider = gatedProvider(opts.steps ?? [], opts.gates ?? []);
  const plugin: Plugin = { name: 'test-fake', apply: (ctx) => void ctx.registerProvider(provider) };
  const lines: string[] = [];
  const server = await startServer({
    port: 0,
    home,
    builtins: [],
    extraPlugins: [plugin, ...(opts.extra ?? [])],
    settings: { defaultProvider: 'fake', ...(opts.settings ?? {}) },
    thirdParty: false,
    log: (l) => lines.push(l),
    webuiDir: opts.webuiDir ?? path.join(home, 'no-webui'),
  });
  servers.push({ server, home, clients: [] });
  const gateway = server.kernel.services.get<GatewayService>('gateway')!;
  return { server, provider, home, wsUrl: `${server.url.replace(/^http/, 'ws')}/ws`, gateway, lines };
}

/** Close every client and server booted by this test file, and remove the temp homes. */
export async function cleanup(): Promise<void> {
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await s.server.close();
    fs.rmSync(s.home, { recursive: true, force: true });
  }
  for (const c of looseClients.splice(0)) c.terminate();
}

const looseClients: TestClient[] = [];

export class TestClient {
  readonly messages: ServerMessage[] = [];
  readonly invalid: string[] = [];
  private waiters: Array<{ pred: (m: ServerMessage) => boolean; resolve: (m: ServerMessage) => void }> = [];
  private nextId = 1;
  closed: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const r = parseServerFrame(data.toString());
      if (!r.ok) {
        this.invalid.push(r.error);
        return;
      }
      for (const m of r.messages) {
        this.messages.push(m);
        for (const w of [...this.waiters]) {
          if (w.pred(m)) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(m);
          }
        }
      }
    });
    this.closed = new Promise((r) => ws.once('close', () => r()));
  }

  static async connect(b: Booted, opts: { token?: string; protocols?: string[]; headers?: Record<string, string> } = {}): Promise<TestClient> {
    const url = opts.protocols ? b.wsUrl : `${b.wsUrl}?token=${encodeURIComponent(opts.token ?? b.server.token)}`;
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers ?? {} });
    const client = new TestClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    looseClients.push(client);
    await client.waitFor((m) => m.type === 'hello');
    return client;
  }

  send(message: object): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Send with a fresh id and wait for the reply. */
  async request(message: Record<string, unknown>, timeoutMs = 5000): Promise<Reply> {
    const id = `r${this.nextId++}`;
    const p = this.waitFor((m) => m.type === 'reply' && m.id === id, timeoutMs);
    this.send({ ...message, id });
    return (await p) as Reply;
  }

  /** Ok reply's data, or throw with the error. */
  async ok<T = Record<string, unknown>>(message: Record<string, unknown>): Promise<T> {
    const r = await this.request(message);
    if (!r.ok) throw new Error(`${String(message.type)} failed: ${r.error.code}: ${r.error.message}`);
    return r.data as T;
  }

  /** The first message (already received or future) matching `pred`. */
  waitFor<T extends ServerMessage = ServerMessage>(pred: (m: ServerMessage) => boolean, timeoutMs = 5000): Promise<T> {
    const found = this.messages.find(pred);
    if (found) return Promise.resolve(found as T);
    return new Promise<T>((resolve, reject) => {
      const w = { pred, resolve: (m: ServerMessage) => (clearTimeout(t), resolve(m as T)) };
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`timed out waiting for a message; last: ${JSON.stringify(this.messages.slice(-3)).slice(0, 600)}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Stream messages (token/thinking/tool/done/error/event) of a conversation, in arrival order. */
  stream(conversationId: string): StreamMessage[] {
    return this.messages.filter((m): m is StreamMessage => 'event' in m && m.conversationId === conversationId);
  }

  /** Wait for the run's terminal message (done or error) after seq `after`. */
  terminal(conversationId: string, after = 0, timeoutMs = 5000): Promise<StreamMessage> {
    return this.waitFor<StreamMessage>((m) => (m.type === 'done' || m.type === 'error') && 'event' in m && m.conversationId === conversationId && m.seq > after, timeoutMs);
  }

  async close(): Promise<void> {
    this.ws.close();
    await this.closed;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

/** Open a socket that the server should refuse; resolves the HTTP status it answered. */
export function refusedStatus(url: string, opts: { protocols?: string[]; headers?: Record<string, string> } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers ?? {} });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('the socket was accepted'));
    });
    ws.on('error', () => undefined);
  });
}

export const text = (s: string) => ({ type: 'chat_queue', item: { action: 'send', text: s, clientRequestId: `c-${Math.random().toString(36).slice(2)}` } });
export const sendTo = (conversationId: string, s: string, clientRequestId = `c-${Math.random().toString(36).slice(2)}`) => ({
  type: 'chat_queue',
  item: { action: 'send', conversationId, text: s, clientRequestId },
});

/**
 * The seqs stream messages stand for: a message that coalesced k deltas covers
 * `seq - k + 1` … `seq` (wire.ts), every other one its own seq.
 */
export function coveredSeqs(ms: Array<{ seq: number; coalesced?: number }>): number[] {
  return ms.flatMap((m) => (m.coalesced && m.coalesced > 1 ? Array.from({ length: m.coalesced }, (_, i) => m.seq - m.coalesced! + 1 + i) : [m.seq]));
}

/**
 * What a stream message must equal, from the runtime's events by seq: the event itself, or for a
 * coalesced delta the last delta of its run with the strings of all of them joined.
 */
export function expectedEvent(m: { seq: number; coalesced?: number }, bySeq: Map<number, LifecycleEvent>): LifecycleEvent | undefined {
  const last = bySeq.get(m.seq);
  if (!m.coalesced || m.coalesced < 2 || last?.type !== 'message_update') return last;
  const parts = coveredSeqs([m]).map((s) => bySeq.get(s) as Extract<LifecycleEvent, { type: 'message_update' }>);
  const d = last.delta;
  const joined = parts.map((e) => (e.delta.kind === 'tool_input' ? e.delta.json : 'text' in e.delta ? e.delta.text : '')).join('');
  return { ...last, delta: d.kind === 'tool_input' ? { ...d, json: joined } : { ...d, text: joined } } as LifecycleEvent;
}

/** Seqs are contiguous (no gap, no duplicate). */
export function contiguous(seqs: number[]): boolean {
  return seqs.every((s, i) => i === 0 || s === seqs[i - 1]! + 1);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

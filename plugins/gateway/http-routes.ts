/**
 * HTTP routes plugins add to the gateway (`/api/uploads`, ...), behind the same checks as the
 * socket: Host and Origin (against DNS rebinding and other pages), then the token, which an HTTP
 * request carries as `Authorization: Bearer <token>` (never in the URL: logs keep URLs). The
 * host hands every `/api/*` request here; a route's handler runs only once access passed.
 *
 * A page on an allowed origin other than the server's own (a dev server on localhost) may call
 * the routes: their answers carry CORS headers for it, and its preflight is answered without the
 * token (browsers send none on a preflight).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Disposable } from '../../plugin-api.js';
import { sendJsonError } from '../../lib/http/json-reply.js';
import { bearerToken, checkAccess, type AccessPolicy, type RefusalLog } from './access.js';

/** Answers one request of a route (see GatewayService.registerHttpRoute). A throw becomes a JSON 500. */
export type HttpRouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

interface Route {
  method: string;
  prefix: string;
  handler: HttpRouteHandler;
}

const PREFIX = /^\/api\/[A-Za-z0-9/_-]+$/;

export class HttpRoutes {
  private routes: Route[] = [];

  constructor(
    private readonly policy: () => AccessPolicy | undefined,
    private readonly refusals: RefusalLog,
    private readonly onError: (message: string, err: unknown) => void,
  ) {}

  register(method: string, prefix: string, handler: HttpRouteHandler): Disposable {
    const m = method.toUpperCase();
    if (!/^[A-Z]+$/.test(m)) throw new Error(`cannot register an HTTP route for method "${method}"`);
    if (!PREFIX.test(prefix) || prefix.endsWith('/')) throw new Error(`cannot register an HTTP route at "${prefix}": use a path under /api/ without a trailing slash`);
    if (this.routes.some((r) => r.method === m && r.prefix === prefix)) throw new Error(`an HTTP route for ${m} ${prefix} is already registered`);
    const route = { method: m, prefix, handler };
    this.routes.push(route);
    return { dispose: () => void (this.routes = this.routes.filter((r) => r !== route)) };
  }

  /** Answer `req` when a route's prefix matches its path; false when none does (the host answers 404). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://x');
    const matching = this.routes.filter((r) => url.pathname === r.prefix || url.pathname.startsWith(`${r.prefix}/`));
    if (!matching.length) return false;
    const policy = this.policy();
    if (!policy) {
      sendJsonError(res, 503, 'unavailable', 'the gateway is not running');
      return true;
    }
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const methods = [...new Set(matching.map((r) => r.method))];
    if (req.method === 'OPTIONS') {
      this.preflight(req, res, policy, methods);
      return true;
    }
    // '' (not undefined, which would fall back to the URL's token): HTTP takes the header only.
    const decision = checkAccess(req, policy, bearerToken(req) ?? '');
    if (!decision.ok) {
      this.refusals.record(decision.kind, decision.reason, req.socket.remoteAddress);
      // The body is not read: the client learns at once, and a large one is not taken in.
      res.setHeader('Connection', 'close');
      sendJsonError(res, decision.status, decision.status === 401 ? 'unauthorized' : 'forbidden', decision.reason);
      req.resume();
      return true;
    }
    cors(req, res);
    const route = matching.find((r) => r.method === method);
    if (!route) {
      res.setHeader('Allow', methods.join(', '));
      sendJsonError(res, 405, 'method_not_allowed', `${req.method} is not allowed here (allowed: ${methods.join(', ')})`);
      req.resume();
      return true;
    }
    Promise.resolve()
      .then(() => route.handler(req, res, url))
      .catch((err: unknown) => {
        this.onError(`HTTP ${route.method} ${route.prefix} failed`, err);
        if (!res.headersSent) sendJsonError(res, 500, 'internal', (err as Error)?.message ?? String(err));
        else res.destroy();
      });
    return true;
  }

  private preflight(req: IncomingMessage, res: ServerResponse, policy: AccessPolicy, methods: string[]): void {
    const decision = checkAccess(req, policy, null);
    if (!decision.ok || !req.headers.origin) {
      sendJsonError(res, decision.ok ? 400 : decision.status, decision.ok ? 'bad_request' : 'forbidden', decision.ok ? 'a preflight needs an Origin header' : decision.reason);
      return;
    }
    cors(req, res);
    res.writeHead(204, {
      'Access-Control-Allow-Methods': [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].join(', '),
      'Access-Control-Allow-Headers': 'Authorization, Content-Type',
      'Access-Control-Max-Age': '600',
    });
    res.end();
  }
}

/** The checks passed, so an Origin here is allowed: let that page read the answer. */
function cors(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  if (!origin) return;
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
}

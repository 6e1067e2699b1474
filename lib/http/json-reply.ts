/**
 * JSON answers for HTTP routes: the one shape every `/api/*` route answers with, shared by the
 * gateway (which owns the routes' access checks) and the plugins that add routes (uploads), so
 * neither imports the other's files.
 */
import type { ServerResponse } from 'node:http';

/** `{ error: { code, message } }` with `status`, the shape every route answers errors with. */
export function sendJsonError(res: ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { error: { code, message } });
}

/** `body` as JSON with `status`, never cached or sniffed; a response already under way is cut instead (its headers are gone). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  res.end(text);
}

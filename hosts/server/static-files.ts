/**
 * Serving the built WebUI (`webui/dist`): static files with their content types, index.html for
 * SPA routes, and a small page saying how to build when there is no build.
 */
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
  '.webmanifest': 'application/manifest+json',
};

export function contentTypeOf(file: string): string {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** The package root (where package.json names "liveagent"), from source or from dist/. */
export function packageRoot(from = path.dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    try {
      if (JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'liveagent') return dir;
    } catch {
      /* keep climbing */
    }
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

const NO_BUILD_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>LiveAgent</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>LiveAgent is running</h1>
<p>The WebUI has not been built yet. Run <code>npm run build</code>, then reload this page.</p>
<p>The gateway is up at <code>/ws</code>; <code>/api/health</code> answers too.</p>
</body></html>
`;

const BASE_HEADERS = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };

/** Answer a GET/HEAD for a static file under `root`. */
export async function serveStatic(req: IncomingMessage, res: ServerResponse, root: string): Promise<void> {
  const index = path.join(root, 'index.html');
  if (!fs.existsSync(index)) {
    res.writeHead(200, { ...BASE_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : NO_BUILD_PAGE);
    return;
  }
  let pathname: string;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  } catch {
    return plain(res, 400, 'bad path');
  }
  if (pathname.includes('\0')) return plain(res, 400, 'bad path');
  // Resolve inside root only: "..", absolute tricks and symlinks out of it are refused.
  const file = path.resolve(root, `.${path.posix.normalize(pathname)}`);
  if (file !== root && !file.startsWith(root + path.sep)) return plain(res, 403, 'forbidden');
  let target = file;
  let stat = await fs.promises.stat(target).catch(() => undefined);
  if (stat?.isDirectory()) {
    target = path.join(target, 'index.html');
    stat = await fs.promises.stat(target).catch(() => undefined);
  }
  if (!stat?.isFile()) {
    // SPA routes (no extension) get index.html; a missing asset is a real 404.
    if (path.extname(pathname)) return plain(res, 404, 'not found');
    target = index;
    stat = await fs.promises.stat(target);
  }
  const real = await fs.promises.realpath(target).catch(() => target);
  const realRoot = await fs.promises.realpath(root).catch(() => root);
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return plain(res, 403, 'forbidden');
  const isHtml = target.endsWith('.html');
  // Vite's hashed assets never change; index.html must always be fresh.
  const cache = !isHtml && pathname.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
  res.writeHead(200, { ...BASE_HEADERS, 'Content-Type': contentTypeOf(target), 'Content-Length': stat.size, 'Cache-Control': cache });
  if (req.method === 'HEAD') return void res.end();
  const stream = fs.createReadStream(target);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

export function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...BASE_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${text}\n`);
}

/**
 * The file tools touch regular files and folders only: a named pipe, a socket or a device is
 * refused at once (a write to a pipe used to hang forever), and every tool honours the run's
 * abort signal, returning promptly and leaving the file as it was.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ToolResult } from '../../plugin-api.js';
import { createDeleteTool } from '../../plugins/tool-delete/index.js';
import { createEditTool } from '../../plugins/tool-edit/index.js';
import { createImageTool } from '../../plugins/tool-image/index.js';
import { createReadTool } from '../../plugins/tool-read/index.js';
import { abortable } from '../../lib/tool-shared/abort.js';
import { createWriteTool } from '../../plugins/tool-write/index.js';
import { makeSandbox, textOf, type Sandbox } from '../helpers/tool-context.js';

const read = createReadTool();
const write = createWriteTool();
const edit = createEditTool();
const del = createDeleteTool();
const image = createImageTool();

let sb: Sandbox;
const fifos: string[] = [];
const servers: net.Server[] = [];
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(async () => {
  // Release anything a broken tool left blocked on a pipe: O_RDWR opens a FIFO without waiting.
  for (const f of fifos.splice(0)) {
    try {
      fs.closeSync(fs.openSync(f, fs.constants.O_RDWR | fs.constants.O_NONBLOCK));
    } catch {}
  }
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  sb.cleanup();
});

/** The call's result, or a failure naming the hang: a refused special file must answer at once. */
async function within(p: Promise<ToolResult>, what: string, ms = 3000): Promise<ToolResult> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

function mkfifo(rel: string): string {
  const file = path.join(sb.workdir, rel);
  execFileSync('mkfifo', [file]);
  fifos.push(file);
  return file;
}

async function listen(rel: string): Promise<string> {
  const file = path.join(sb.workdir, rel);
  const server = net.createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(file, resolve));
  return file;
}

/** A signal that aborts itself on its `n`-th check: lands an abort between two chunks, deterministically. */
function abortOnCheck(n: number): AbortSignal {
  const ac = new AbortController();
  let checks = 0;
  Object.defineProperty(ac.signal, 'aborted', {
    get() {
      if (++checks >= n && !ac.signal.reason) ac.abort();
      return ac.signal.reason !== undefined;
    },
  });
  return ac.signal;
}

const tmpFiles = () => fs.readdirSync(sb.workdir).filter((n) => n.endsWith('.tmp'));

describe('special files are refused, never opened in a way that can hang', () => {
  it('a named pipe (FIFO): Write, Edit, Read and Image refuse it at once and it stays a pipe', async () => {
    const fifo = mkfifo('pipe');
    // One at a time: two calls at once could pair up as the pipe's reader and writer.
    const calls: Array<[string, () => Promise<ToolResult>]> = [
      ['Write', () => write.execute({ file_path: 'pipe', content: 'x' }, sb.ctx())],
      ['Edit', () => edit.execute({ file_path: 'pipe', old_string: 'a', new_string: 'b' }, sb.ctx())],
      ['Read', () => read.execute({ file_path: 'pipe' }, sb.ctx())],
      ['Image', () => image.execute({ file_path: 'pipe' }, sb.ctx())],
    ];
    for (const [name, call] of calls) {
      const r = await within(call(), `${name} on a FIFO`);
      expect(r.isError, name).toBe(true);
      expect(textOf(r), name).toContain('pipe is a named pipe (FIFO), not a regular file or folder');
      expect(r.editedFiles, name).toBeUndefined();
    }
    expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('a unix socket: Write, Edit, Read and Image refuse it and it stays a socket', async () => {
    const sock = await listen('app.sock');
    for (const [name, call] of [
      ['Write', () => write.execute({ file_path: 'app.sock', content: 'x' }, sb.ctx())],
      ['Edit', () => edit.execute({ file_path: 'app.sock', old_string: 'a', new_string: 'b' }, sb.ctx())],
      ['Read', () => read.execute({ file_path: 'app.sock' }, sb.ctx())],
      ['Image', () => image.execute({ file_path: 'app.sock' }, sb.ctx())],
    ] as const) {
      const r = await within(call(), `${name} on a socket`);
      expect(r.isError, name).toBe(true);
      expect(textOf(r), name).toContain('app.sock is a socket, not a regular file or folder');
    }
    expect(fs.lstatSync(sock).isSocket()).toBe(true);
  });

  it('/dev/zero and /dev/null through links inside the workspace are refused by every tool', async () => {
    fs.symlinkSync('/dev/zero', path.join(sb.workdir, 'zero'));
    fs.symlinkSync('/dev/null', path.join(sb.workdir, 'null'));
    for (const name of ['zero', 'null']) {
      for (const call of [
        write.execute({ file_path: name, content: 'x' }, sb.ctx()),
        edit.execute({ file_path: name, old_string: 'a', new_string: 'b' }, sb.ctx()),
        read.execute({ file_path: name }, sb.ctx()),
        image.execute({ file_path: name }, sb.ctx()),
      ]) {
        const r = await within(call, `a tool on ${name}`);
        expect(r.isError).toBe(true);
        expect(textOf(r)).toMatch(new RegExp(`^Refused: "${name}" resolves through a symbolic link to /dev/${name}, outside`));
      }
      expect(fs.lstatSync(path.join(sb.workdir, name)).isSymbolicLink()).toBe(true);
    }
  });

  it('a link inside the workspace to a FIFO inside is refused like the FIFO itself', async () => {
    mkfifo('pipe');
    fs.symlinkSync('pipe', path.join(sb.workdir, 'to-pipe'));
    const r = await within(write.execute({ file_path: 'to-pipe', content: 'x' }, sb.ctx()), 'Write through a link to a FIFO');
    expect(textOf(r)).toContain('is a named pipe (FIFO)');
  });

  it('Delete removes a FIFO or a socket entry without opening it', async () => {
    const fifo = mkfifo('pipe');
    const sock = await listen('app.sock');
    const a = await within(del.execute({ path: 'pipe' }, sb.ctx()), 'Delete of a FIFO');
    expect(textOf(a)).toBe('Deleted pipe (a named pipe (FIFO)).');
    const b = await within(del.execute({ path: 'app.sock' }, sb.ctx()), 'Delete of a socket');
    expect(textOf(b)).toBe('Deleted app.sock (a socket).');
    expect(fs.existsSync(fifo) || fs.existsSync(sock)).toBe(false);
  });
});

describe('every file tool honours abort', () => {
  it('an already-aborted run: nothing is written, edited, read or deleted', async () => {
    sb.write('a.txt', 'keep\n');
    const ac = new AbortController();
    ac.abort();
    const ctx = sb.ctx({ signal: ac.signal });
    for (const [name, call] of [
      ['Write', write.execute({ file_path: 'a.txt', content: 'lost' }, ctx)],
      ['Write (new)', write.execute({ file_path: 'b.txt', content: 'lost' }, ctx)],
      ['Edit', edit.execute({ file_path: 'a.txt', old_string: 'keep', new_string: 'lost' }, ctx)],
      ['Read', read.execute({ file_path: 'a.txt' }, ctx)],
      ['Image', image.execute({ file_path: 'a.txt' }, ctx)],
      ['Delete', del.execute({ path: 'a.txt' }, ctx)],
    ] as const) {
      const r = await within(call, name);
      expect(r.isError, name).toBe(true);
      expect(textOf(r), name).toMatch(/^Stopped: the run was aborted while/);
      expect(r.details, name).toMatchObject({ aborted: true });
    }
    expect(sb.read('a.txt')).toBe('keep\n');
    expect(sb.exists('b.txt')).toBe(false);
  });

  it('an abort between the chunks of a large Write keeps the old content and removes the temp file', async () => {
    sb.write('big.txt', 'old\n');
    const content = 'y'.repeat(32 * 1024 * 1024);
    const r = await within(write.execute({ file_path: 'big.txt', content }, sb.ctx({ signal: abortOnCheck(8) })), 'an aborted Write');
    expect(textOf(r)).toBe('Stopped: the run was aborted while writing big.txt.');
    expect(r.editedFiles).toBeUndefined();
    expect(sb.read('big.txt')).toBe('old\n');
    // The abandoned body cleans up in the background.
    for (let i = 0; i < 100 && tmpFiles().length; i++) await new Promise((res) => setTimeout(res, 20));
    expect(tmpFiles()).toEqual([]);
  });

  it('an abort while Edit reads a large file leaves it unchanged; Read stops too', async () => {
    const big = 'z'.repeat(16 * 1024 * 1024) + '\nneedle\n';
    sb.write('big.txt', big);
    const e = await within(edit.execute({ file_path: 'big.txt', old_string: 'needle', new_string: 'pin' }, sb.ctx({ signal: abortOnCheck(8) })), 'an aborted Edit');
    expect(textOf(e)).toBe('Stopped: the run was aborted while editing big.txt.');
    const r = await within(read.execute({ file_path: 'big.txt', offset: 2 }, sb.ctx({ signal: abortOnCheck(8) })), 'an aborted Read');
    expect(textOf(r)).toBe('Stopped: the run was aborted while reading big.txt.');
    expect(fs.statSync(path.join(sb.workdir, 'big.txt')).size).toBe(big.length);
    expect(tmpFiles()).toEqual([]);
  });

  it('a step that never settles still returns promptly on abort, and what it yields late is disposed of', async () => {
    const ac = new AbortController();
    let settle!: (v: string) => void;
    const stuck = new Promise<string>((resolve) => (settle = resolve));
    const disposed: string[] = [];
    const p = abortable(stuck, ac.signal, () => new Error('aborted'), (v) => disposed.push(v));
    setTimeout(() => ac.abort(), 10);
    await expect(p).rejects.toThrow('aborted');
    settle('handle');
    await new Promise((res) => setTimeout(res, 0));
    expect(disposed).toEqual(['handle']);
  });
});

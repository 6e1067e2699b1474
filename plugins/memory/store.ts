/**
 * The memory commands, as Anthropic's memory tool defines them (view, create, str_replace,
 * insert, delete, rename), on virtual `/memories` paths (paths.ts). Each returns the text the
 * model reads, or throws a ToolFailure whose message says what is wrong and what to do.
 *
 * The service (service.ts) uses the same store, so the WebUI and the model edit memory through
 * one set of checks.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { ToolFailure } from '../../lib/tool-shared/results.js';
import { humanSize, readText, writeAtomic } from './files.js';
import { locate, parseVirtual, refuse, virtualOf, PROJECT_SEGMENT, VIRTUAL_ROOT, type Checked, type MemoryRoots } from './paths.js';

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;
const numbered = (lines: string[], first: number) => lines.map((l, i) => `${String(first + i).padStart(6)}\t${l}`).join('\n');

/** The lines of a file's text, without the empty "line" after a final newline. */
function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  return lines;
}

function missing(p: string): ToolFailure {
  return new ToolFailure(`The path ${p} does not exist. View ${VIRTUAL_ROOT} to see what is there.`);
}

export class MemoryStore {
  constructor(
    private readonly home: string,
    private readonly maxFileBytes: () => number,
  ) {}

  private roots(workdir?: string): MemoryRoots {
    return workdir ? { home: this.home, workdir } : { home: this.home };
  }

  private checkSize(text: string, shown: string): void {
    const bytes = Buffer.byteLength(text);
    const max = this.maxFileBytes();
    if (bytes > max) refuse(`${shown} would be ${bytes} bytes, over the ${max}-byte limit for a memory file (memory.maxFileBytes); keep memories short, or split them into several files`);
  }

  private async existingFile(p: string, workdir?: string): Promise<{ loc: Checked; text: string }> {
    const loc = await locate(p, this.roots(workdir));
    if (!loc.stat) throw missing(loc.virtual);
    if (loc.stat.isDirectory()) throw new ToolFailure(`${loc.virtual} is a folder, not a file`);
    return { loc, text: await readText(loc.abs, loc.virtual) };
  }

  /** A folder listing (two levels) or a file with line numbers. */
  async view(p: string, range: [number, number] | undefined, workdir?: string): Promise<string> {
    const loc = await locate(p, this.roots(workdir));
    if (!loc.stat && loc.rel.length) throw missing(loc.virtual);
    if (!loc.stat || loc.stat.isDirectory()) return this.listing(loc, workdir);
    const lines = linesOf(await readText(loc.abs, loc.virtual));
    if (!range) return `Here's the content of ${loc.virtual} with line numbers:\n${lines.length ? numbered(lines, 1) : '(empty file)'}`;
    const [start, end] = range;
    if (start < 1 || start > Math.max(1, lines.length)) throw new ToolFailure(`Invalid view_range [${start}, ${end}]: the first line must be within [1, ${lines.length}]`);
    if (end !== -1 && (end < start || end > lines.length)) throw new ToolFailure(`Invalid view_range [${start}, ${end}]: the last line must be -1 or within [${start}, ${lines.length}]`);
    const slice = lines.slice(start - 1, end === -1 ? undefined : end);
    return `Here's the content of ${loc.virtual} (lines ${start}-${start + slice.length - 1} of ${lines.length}) with line numbers:\n${numbered(slice, start)}`;
  }

  private async listing(loc: Checked, workdir?: string): Promise<string> {
    const rows: string[] = [];
    const walk = async (dir: string, scope: Checked['scope'], rel: string[], depth: number) => {
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        if (scope === 'user' && rel.length === 0 && e.name === PROJECT_SEGMENT) continue;
        const v = virtualOf(scope, [...rel, e.name]);
        const abs = path.join(dir, e.name);
        if (e.isDirectory()) {
          rows.push(`-\t${v}/`);
          if (depth < 2) await walk(abs, scope, [...rel, e.name], depth + 1);
        } else if (e.isFile()) {
          const st = await fsp.lstat(abs).catch(() => undefined);
          if (st) rows.push(`${humanSize(st.size)}\t${v}`);
        }
      }
    };
    if (loc.stat) await walk(loc.abs, loc.scope, loc.rel, 1);
    if (loc.scope === 'user' && loc.rel.length === 0) {
      // The project scope hangs under /memories/project.
      const project = workdir ? await locate(`${VIRTUAL_ROOT}/${PROJECT_SEGMENT}`, this.roots(workdir)).catch(() => undefined) : undefined;
      rows.push(`-\t${VIRTUAL_ROOT}/${PROJECT_SEGMENT}/ (this project's memory${workdir ? `, ${workdir}` : ': no working folder'})`);
      if (project?.stat) await walk(project.abs, 'project', [], 2);
    }
    const body = rows.length ? rows.join('\n') : '(empty)';
    return `Here're the files and directories up to 2 levels deep in ${loc.virtual}, excluding hidden items:\n${body}`;
  }

  async create(p: string, text: string, workdir?: string, opts: { overwrite?: boolean } = {}): Promise<string> {
    const v = parseVirtual(p);
    if (!v.rel.length) refuse(`${v.virtual} is a memory folder; create a file inside it, e.g. ${v.virtual}/notes.md`);
    this.checkSize(text, v.virtual);
    const loc = await locate(p, this.roots(workdir), { create: true });
    if (loc.stat?.isDirectory()) throw new ToolFailure(`${loc.virtual} is a folder, not a file`);
    if (loc.stat && !opts.overwrite) {
      throw new ToolFailure(`Error: File ${loc.virtual} already exists. Change it with str_replace or insert, or delete it first.`);
    }
    await writeAtomic(path.dirname(loc.abs), path.basename(loc.abs), text);
    return `File created successfully at: ${loc.virtual}`;
  }

  async strReplace(p: string, oldStr: string, newStr: string, workdir?: string): Promise<string> {
    if (oldStr === '') throw new ToolFailure('old_str is empty; give the exact text to replace');
    const { loc, text } = await this.existingFile(p, workdir);
    const at: number[] = [];
    for (let i = text.indexOf(oldStr); i >= 0; i = text.indexOf(oldStr, i + 1)) at.push(i);
    if (at.length === 0) throw new ToolFailure(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${loc.virtual}.`);
    if (at.length > 1) {
      const lineNos = at.map((i) => text.slice(0, i).split('\n').length);
      throw new ToolFailure(`No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines: ${lineNos.join(', ')}. Please ensure it is unique.`);
    }
    const next = text.slice(0, at[0]) + newStr + text.slice(at[0]! + oldStr.length);
    this.checkSize(next, loc.virtual);
    await writeAtomic(path.dirname(loc.abs), path.basename(loc.abs), next);
    const lines = linesOf(next);
    const line = next.slice(0, at[0]).split('\n').length;
    const from = Math.max(1, line - 3);
    const snippet = lines.slice(from - 1, line + newStr.split('\n').length + 2);
    return `The memory file has been edited.\n${numbered(snippet, from)}`;
  }

  async insert(p: string, insertLine: number, insertText: string, workdir?: string): Promise<string> {
    const { loc, text } = await this.existingFile(p, workdir);
    const lines = linesOf(text);
    if (insertLine < 0 || insertLine > lines.length) {
      throw new ToolFailure(`Error: Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of lines of the file: [0, ${lines.length}]`);
    }
    lines.splice(insertLine, 0, ...linesOf(insertText.endsWith('\n') ? insertText : `${insertText}\n`));
    const next = `${lines.join('\n')}\n`;
    this.checkSize(next, loc.virtual);
    await writeAtomic(path.dirname(loc.abs), path.basename(loc.abs), next);
    return `The file ${loc.virtual} has been edited.`;
  }

  async delete(p: string, workdir?: string): Promise<string> {
    const loc = await locate(p, this.roots(workdir));
    if (!loc.rel.length) refuse(`${loc.virtual} is a memory folder itself; delete the files inside it instead`);
    if (!loc.stat) throw missing(loc.virtual);
    if (loc.stat.isDirectory()) await fsp.rm(loc.abs, { recursive: true });
    else await fsp.unlink(loc.abs);
    return `Successfully deleted ${loc.virtual}`;
  }

  async rename(oldPath: string, newPath: string, workdir?: string): Promise<string> {
    const roots = this.roots(workdir);
    const from = await locate(oldPath, roots);
    if (!from.rel.length) refuse(`${from.virtual} is a memory folder itself and cannot be renamed`);
    if (!from.stat) throw missing(from.virtual);
    const target = parseVirtual(newPath);
    if (!target.rel.length) refuse(`${target.virtual} is a memory folder itself; name a path inside it`);
    if (target.scope === from.scope && target.rel.length > from.rel.length && from.rel.every((s, i) => target.rel[i] === s)) {
      refuse(`${target.virtual} is inside ${from.virtual}; a folder cannot move into itself`);
    }
    const to = await locate(newPath, roots, { create: true });
    if (to.stat) throw new ToolFailure(`Error: The destination ${to.virtual} already exists. Delete it first or choose another name.`);
    try {
      await fsp.rename(from.abs, to.abs);
    } catch (err) {
      // The two scopes can live on different file systems (home vs. a project on another disk).
      if (codeOf(err) !== 'EXDEV' || from.stat.isDirectory()) throw err;
      const text = await readText(from.abs, from.virtual);
      await writeAtomic(path.dirname(to.abs), path.basename(to.abs), text);
      await fsp.unlink(from.abs);
    }
    return `Successfully renamed ${from.virtual} to ${to.virtual}`;
  }

  /** The text of a memory file (for the service). */
  async read(p: string, workdir?: string): Promise<string> {
    return (await this.existingFile(p, workdir)).text;
  }

  /** Append `line` to a file, creating it (for accepted proposals). */
  async append(p: string, line: string, workdir?: string): Promise<string> {
    const loc = await locate(p, this.roots(workdir), { create: true });
    if (!loc.rel.length || loc.stat?.isDirectory()) throw new ToolFailure(`${loc.virtual} is a folder, not a file`);
    const before = loc.stat ? await readText(loc.abs, loc.virtual) : '';
    const next = `${before}${before && !before.endsWith('\n') ? '\n' : ''}${line.endsWith('\n') ? line : `${line}\n`}`;
    this.checkSize(next, loc.virtual);
    await writeAtomic(path.dirname(loc.abs), path.basename(loc.abs), next);
    return loc.virtual;
  }
}

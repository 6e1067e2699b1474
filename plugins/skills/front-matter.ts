/**
 * The YAML front matter of a SKILL.md, parsed by hand: no YAML library is installed, and the
 * Agent Skills front matter is a flat map of a few keys. Supported, as SKILL.md files in the
 * wild write them:
 *  - `key: plain value`, with a `# comment` after it, and continuation lines indented under it
 *    (folded with spaces, as YAML folds a multi-line plain scalar);
 *  - `"double quoted"` (with \" \\ \n \t \uXXXX escapes) and `'single quoted'` ('' for ');
 *  - block scalars `|` and `>` (with `-`/`+` chomping);
 *  - one level of nesting (`metadata:` with indented `key: value` lines) and `- item` lists;
 *  - flow values (`[a, b]`, `{a: b}`) are kept as their raw text.
 * A plain value holding ": " is taken as text, where strict YAML would refuse it: the Agent
 * Skills client guide asks clients to be lenient about exactly that.
 *
 * Anything else is an error naming the line, so a broken skill is reported, not guessed at.
 */

export type FrontValue = string | string[] | Record<string, string>;

export interface FrontMatter {
  data: Record<string, FrontValue>;
  /** The Markdown after the closing `---`. */
  body: string;
}

export class FrontMatterError extends Error {}

const KEY_LINE = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$/;
const indentOf = (line: string) => line.length - line.trimStart().length;
const isBlank = (line: string) => line.trim() === '' || line.trimStart().startsWith('#');

function unquoteDouble(s: string, lineNo: number): string {
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"') {
      const rest = s.slice(i + 1).trim();
      if (rest && !rest.startsWith('#')) throw new FrontMatterError(`line ${lineNo}: text after the closing quote`);
      return out;
    }
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = s[++i];
    if (n === 'n') out += '\n';
    else if (n === 't') out += '\t';
    else if (n === 'u' && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 1, i + 5))) {
      out += String.fromCharCode(parseInt(s.slice(i + 1, i + 5), 16));
      i += 4;
    } else if (n !== undefined) out += n;
  }
  throw new FrontMatterError(`line ${lineNo}: the double quote is never closed (quoted values must end on their line)`);
}

function unquoteSingle(s: string, lineNo: number): string {
  let out = '';
  for (let i = 1; i < s.length; i++) {
    if (s[i] === "'") {
      if (s[i + 1] === "'") {
        out += "'";
        i++;
        continue;
      }
      const rest = s.slice(i + 1).trim();
      if (rest && !rest.startsWith('#')) throw new FrontMatterError(`line ${lineNo}: text after the closing quote`);
      return out;
    }
    out += s[i];
  }
  throw new FrontMatterError(`line ${lineNo}: the single quote is never closed (quoted values must end on their line)`);
}

function scalar(raw: string, lineNo: number): string {
  const v = raw.trim();
  if (v.startsWith('"')) return unquoteDouble(v, lineNo);
  if (v.startsWith("'")) return unquoteSingle(v, lineNo);
  return v.replace(/\s+#.*$/, '');
}

/** Split a SKILL.md into front matter and body; throws FrontMatterError naming the problem. */
export function parseFrontMatter(text: string): FrontMatter {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trim() !== '---') throw new FrontMatterError('it does not start with YAML front matter (a first line "---")');
  const close = lines.findIndex((l, i) => i > 0 && (l.trim() === '---' || l.trim() === '...'));
  if (close < 0) throw new FrontMatterError('the front matter is never closed (no "---" line after the opening one)');
  const data: Record<string, FrontValue> = {};
  const fm = lines.slice(1, close);
  let i = 0;
  while (i < fm.length) {
    const line = fm[i]!;
    const lineNo = i + 2;
    if (isBlank(line)) {
      i++;
      continue;
    }
    if (indentOf(line) > 0) throw new FrontMatterError(`line ${lineNo}: unexpected indentation`);
    const m = KEY_LINE.exec(line.trimEnd());
    if (!m) throw new FrontMatterError(`line ${lineNo}: expected "key: value", found ${JSON.stringify(line.slice(0, 60))}`);
    const key = m[1]!;
    if (key in data) throw new FrontMatterError(`line ${lineNo}: "${key}" is given twice`);
    const rawValue = (m[2] ?? '').trim();
    i++;
    // The indented lines that belong to this key.
    const block: string[] = [];
    while (i < fm.length && (fm[i]!.trim() === '' || indentOf(fm[i]!) > 0)) block.push(fm[i++]!);
    while (block.length && block.at(-1)!.trim() === '') block.pop();
    data[key] = valueOf(rawValue, block, lineNo);
  }
  return { data, body: lines.slice(close + 1).join('\n') };
}

function valueOf(rawValue: string, block: string[], lineNo: number): FrontValue {
  const blockScalar = /^([|>])([+-]?)\d*\s*(?:#.*)?$/.exec(rawValue);
  if (blockScalar) {
    const indent = Math.min(...block.filter((l) => l.trim()).map(indentOf), Infinity);
    const body = block.map((l) => (l.trim() ? l.slice(indent === Infinity ? 0 : indent) : ''));
    let text = blockScalar[1] === '|' ? body.join('\n') : foldLines(body);
    // Keep (+) trailing newlines; clip and strip both drop them (values are trimmed anyway).
    if (blockScalar[2] !== '+') text = text.replace(/\n+$/, '');
    return text;
  }
  if (rawValue === '' || rawValue.startsWith('#')) {
    const items = block.filter((l) => !isBlank(l));
    if (!items.length) return '';
    if (items.every((l) => l.trimStart().startsWith('- ') || l.trim() === '-')) return items.map((l) => scalar(l.trimStart().slice(1), lineNo));
    const map: Record<string, string> = {};
    const indent = indentOf(items[0]!);
    for (const l of items) {
      if (indentOf(l) !== indent) throw new FrontMatterError(`line ${lineNo}: "${l.trim().slice(0, 40)}" is nested deeper than one level (only one level of nesting is read)`);
      const mm = KEY_LINE.exec(l.trim());
      if (!mm) throw new FrontMatterError(`line ${lineNo}: the nested value ${JSON.stringify(l.trim().slice(0, 60))} is not "key: value" (only one level of nesting is read)`);
      map[mm[1]!] = scalar(mm[2] ?? '', lineNo);
    }
    return map;
  }
  if (rawValue.startsWith('"') || rawValue.startsWith("'")) {
    if (block.some((l) => l.trim())) throw new FrontMatterError(`line ${lineNo}: a quoted value must end on its line`);
    return scalar(rawValue, lineNo);
  }
  // A plain scalar; indented lines under it continue it.
  const more = block.filter((l) => l.trim()).map((l) => l.trim());
  return [scalar(rawValue, lineNo), ...more].join(' ');
}

/** YAML folding: lines join with a space; a blank line is a newline. */
function foldLines(lines: string[]): string {
  let out = '';
  for (const l of lines) {
    if (l === '') out += '\n';
    else out += out === '' || out.endsWith('\n') ? l : ` ${l}`;
  }
  return out;
}

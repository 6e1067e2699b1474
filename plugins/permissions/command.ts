/**
 * A shell command cut into the simple commands a pattern is matched against: `git status && rm
 * -rf build` is `git status` and `rm -rf build`, so a deny pattern `rm *` still sees the `rm`, and
 * an allow pattern `git *` does not let the `rm` through. Quote-aware, not a shell parser: what
 * it cannot see into (`$(...)`, backticks, `<(...)`) makes the command "opaque", and an opaque
 * command is never allowed by a pattern (its inner text is still checked by deny and ask).
 */

export interface CommandParts {
  /** The simple commands, trimmed, in order (inner `$(...)` / backtick text included). */
  segments: string[];
  /** Something ran that the segments may not show (a substitution). */
  opaque: boolean;
}

const MAX_DEPTH = 8;

export function commandParts(command: string): CommandParts {
  const out: CommandParts = { segments: [], opaque: false };
  split(command, out, 0);
  return out;
}

function split(command: string, out: CommandParts, depth: number): void {
  let current = '';
  let quote: '"' | "'" | null = null;
  const flush = () => {
    const s = clean(current);
    if (s) out.segments.push(s);
    current = '';
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    const next = command[i + 1];
    if (quote === "'") {
      if (c === "'") quote = null;
      current += c;
      continue;
    }
    if (c === '\\' && next !== undefined) {
      current += c + next;
      i++;
      continue;
    }
    // Substitutions run even inside double quotes: their text is a command of its own.
    const sub = c === '$' && next === '(' ? 2 : c === '`' ? 1 : !quote && (c === '<' || c === '>') && next === '(' ? 2 : 0;
    if (sub) {
      out.opaque = true;
      const end = sub === 1 ? command.indexOf('`', i + 1) : closing(command, i + 1);
      const inner = command.slice(i + sub, end < 0 ? command.length : end);
      if (depth < MAX_DEPTH) split(inner, out, depth + 1);
      current += command.slice(i, end < 0 ? command.length : end + 1);
      i = end < 0 ? command.length : end;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = null;
      current += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      current += c;
      continue;
    }
    if (c === '\n' || c === ';' || c === '|') {
      if (c === '|' && next === '|') i++;
      flush();
      continue;
    }
    // `&` separates (`&&`, a background `&`), but not in a redirection (`2>&1`, `&>file`, `>&2`).
    if (c === '&') {
      const prev = command[i - 1];
      if (next === '&') {
        i++;
        flush();
        continue;
      }
      if (prev !== '>' && prev !== '<' && next !== '>') {
        flush();
        continue;
      }
    }
    current += c;
  }
  flush();
}

/** Index of the `)` that closes the `(` at `open`, or -1. */
function closing(s: string, open: number): number {
  let depth = 0;
  let quote: string | null = null;
  for (let i = open; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"') i++;
      continue;
    }
    if (c === '\\') i++;
    else if (c === '"' || c === "'") quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** Grouping and negation around a simple command say nothing about what runs: `( cd x && make )`, `! grep`. */
function clean(segment: string): string {
  let s = segment.trim();
  for (let changed = true; changed && s; ) {
    const before = s;
    s = s.replace(/^[({!]\s*/, '').replace(/\s*[)}]$/, '').trim();
    changed = s !== before;
  }
  return s;
}

/** `FOO=1 BAR=2 cmd args` → `cmd args`: assignments in front do not change which program runs. */
export function withoutAssignments(segment: string): string {
  return segment.replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"(?:[^"\\]|\\.)*"|\S)*\s+)+/, '');
}

/**
 * Tool-name matchers: `Write` matches exactly that tool; a glob (`mcp__*`, `mcp__github__*`,
 * `{Write,Edit}`) matches through picomatch; `Write|Edit` lists alternatives (each exact or a
 * glob); an absent matcher or `*` matches every tool. Names are case-sensitive, as tools are.
 *
 * picomatch is imported only when a matcher needs a glob, so exact matchers cost nothing at boot.
 */
type Matcher = (name: string) => boolean;

const GLOB_CHARS = /[*?[\]{}()!+@]/;
const ANY: Matcher = () => true;

type Picomatch = (glob: string, options?: { dot?: boolean }) => Matcher;

/**
 * picomatch ships no types. The specifier is a variable so that no ambient declaration is
 * needed (another plugin declares the module its own way, and two declarations would clash).
 */
const PICOMATCH = 'picomatch';
let glob: Promise<Picomatch> | undefined;
function picomatch(): Promise<Picomatch> {
  glob ??= (import(PICOMATCH) as Promise<{ default: Picomatch }>).then((m) => m.default);
  return glob;
}

/** Compile a matcher; throws with the reason when the pattern cannot be compiled. */
export async function compileMatcher(pattern: string | undefined): Promise<Matcher> {
  if (pattern === undefined) return ANY;
  const text = pattern.trim();
  if (text === '*' || text === '') return ANY;
  // `|` separates alternatives unless it is inside an extglob group such as `@(a|b)`.
  const alternatives = text.includes('(') ? [text] : text.split('|').map((s) => s.trim()).filter(Boolean);
  const parts: Matcher[] = [];
  for (const alt of alternatives) {
    if (!GLOB_CHARS.test(alt)) {
      parts.push((name) => name === alt);
      continue;
    }
    const pm = await picomatch();
    parts.push(pm(alt, { dot: true }));
  }
  if (parts.length === 1) return parts[0]!;
  return (name) => parts.some((m) => m(name));
}

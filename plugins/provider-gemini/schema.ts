/**
 * JSON Schema (what tools declare, often derived from zod) → the OpenAPI 3.0 subset Gemini's
 * `FunctionDeclaration.parameters` accepts (ai.google.dev/api/caching#Schema). Gemini answers
 * unknown keys with 400 INVALID_ARGUMENT, so this keeps only what the API documents:
 * - kept: type, format (only the ones Gemini lists), title, description, nullable, enum (strings),
 *   properties, required, items, minItems, maxItems, minProperties, maxProperties, minLength,
 *   maxLength, minimum, maximum, anyOf, default, example;
 * - converted: `type: [T, 'null']` and `anyOf [T, {type: null}]` → T + nullable; `const` →
 *   enum; oneOf → anyOf; single-branch allOf merged; exclusiveMinimum/Maximum → minimum/maximum;
 *   local `$ref`s (#/$defs/..., #/definitions/..., #) inlined, recursion cut at a depth limit;
 * - dropped: $schema, $id, $defs, additionalProperties, patternProperties, pattern (Gemini's RE2
 *   rejects zod's lookaheads), not, if/then/else, uniqueItems, multipleOf, and anything else.
 * Non-string enums become a description note: Gemini enums are strings only.
 */
import type { JsonObject, JsonValue } from '../../plugin-api.js';

type Schema = { [key: string]: unknown };

const FORMATS: Record<string, Set<string>> = {
  string: new Set(['enum', 'date-time']),
  number: new Set(['float', 'double']),
  integer: new Set(['int32', 'int64']),
};
const COPY = ['title', 'description', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'minimum', 'maximum', 'default', 'example'] as const;
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
const MAX_REF_DEPTH = 4;

const isObj = (v: unknown): v is Schema => !!v && typeof v === 'object' && !Array.isArray(v);

function resolveRef(root: Schema, ref: string): Schema | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    cur = isObj(cur) ? cur[key] : undefined;
  }
  return isObj(cur) ? cur : undefined;
}

function isNullSchema(s: unknown): boolean {
  return isObj(s) && (s.type === 'null' || (Array.isArray(s.enum) && s.enum.length === 1 && s.enum[0] === null));
}

function convert(s: Schema, root: Schema, depth: number): Schema {
  if (typeof s.$ref === 'string') {
    const target = depth < MAX_REF_DEPTH ? resolveRef(root, s.$ref) : undefined;
    // A ref that cannot be followed (remote, or recursion past the limit) becomes an open object.
    if (!target) return { type: 'object', ...(typeof s.description === 'string' ? { description: s.description } : {}) };
    const { $ref: _ref, ...siblings } = s;
    return convert({ ...target, ...siblings }, root, depth + 1);
  }
  if (Array.isArray(s.allOf) && s.allOf.length === 1 && isObj(s.allOf[0])) {
    const { allOf: _a, ...rest } = s;
    return convert({ ...s.allOf[0], ...rest }, root, depth);
  }
  const out: Schema = {};
  let nullable = s.nullable === true;

  const branches = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined)?.filter(isObj);
  if (branches) {
    const nonNull = branches.filter((b) => !isNullSchema(b));
    if (nonNull.length < branches.length) nullable = true;
    if (nonNull.length === 1) {
      const inner = convert(nonNull[0]!, root, depth);
      for (const k of COPY) if (s[k] !== undefined && inner[k] === undefined) inner[k] = s[k];
      if (nullable) inner.nullable = true;
      return inner;
    }
    if (nonNull.length > 1) out.anyOf = nonNull.map((b) => convert(b, root, depth));
  }

  let type = s.type;
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null');
    if (types.length < type.length) nullable = true;
    if (types.length === 1) type = types[0];
    else {
      // Several types: Gemini has no type unions outside anyOf.
      if (!out.anyOf && types.length > 1) out.anyOf = types.filter((t): t is string => typeof t === 'string' && TYPES.has(t)).map((t) => ({ type: t }));
      type = undefined;
    }
  }
  if (type === 'null') {
    type = undefined;
    nullable = true;
  }

  let values: unknown[] | undefined = Array.isArray(s.enum) ? s.enum.filter((v) => v !== null) : 'const' in s && s.const !== null ? [s.const] : undefined;
  if (Array.isArray(s.enum) && s.enum.includes(null)) nullable = true;
  let note: string | undefined;
  if (values && !values.every((v) => typeof v === 'string')) {
    note = `One of: ${values.map((v) => JSON.stringify(v)).join(', ')}.`;
    values = undefined;
  }
  if (typeof type !== 'string' || !TYPES.has(type)) {
    type = undefined;
    if (isObj(s.properties)) type = 'object';
    else if (s.items !== undefined) type = 'array';
    else if (values) type = 'string';
  }
  if (type) out.type = type;
  if (typeof s.format === 'string' && type && FORMATS[type as string]?.has(s.format)) out.format = s.format;
  if (values?.length) {
    out.enum = values;
    if (type === 'string' && !out.format) out.format = 'enum';
  }
  for (const k of COPY) if (s[k] !== undefined) out[k] = s[k];
  if (typeof s.exclusiveMinimum === 'number' && out.minimum === undefined) out.minimum = s.exclusiveMinimum;
  if (typeof s.exclusiveMaximum === 'number' && out.maximum === undefined) out.maximum = s.exclusiveMaximum;
  if (note) out.description = out.description ? `${out.description} ${note}` : note;
  if (nullable) out.nullable = true;

  if (type === 'object' && isObj(s.properties)) {
    const props: Schema = {};
    for (const [name, p] of Object.entries(s.properties)) props[name] = isObj(p) ? convert(p, root, depth) : {};
    if (Object.keys(props).length) {
      out.properties = props;
      const required = Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === 'string' && r in props) : [];
      if (required.length) out.required = required;
    }
  }
  if (type === 'array') {
    const items = Array.isArray(s.items) ? s.items[0] : Array.isArray(s.prefixItems) ? s.prefixItems[0] : s.items;
    if (isObj(items)) out.items = convert(items, root, depth);
  }
  return out;
}

/**
 * A tool's `inputSchema` as Gemini `parameters`, or undefined when the tool takes no arguments
 * (Gemini refuses an OBJECT with empty `properties`, so such a declaration has no parameters).
 */
export function toGeminiSchema(schema: JsonObject): JsonObject | undefined {
  const out = convert(schema as Schema, schema as Schema, 0);
  if (out.type === 'object' && !out.properties && !out.anyOf) return undefined;
  if (!out.type && !out.anyOf) return undefined;
  return out as { [key: string]: JsonValue };
}

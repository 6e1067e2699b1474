/**
 * zod's per-parse option for a value parsed once (a settings section, read when the settings
 * change): zod then compiles no fast path for the schema, which only pays for schemas parsed
 * over and over. The builtins' copy of core/validate-once.ts (the kernel imports nothing from lib/).
 */
export const ONE_OFF_PARSE = Object.freeze({ jitless: true });

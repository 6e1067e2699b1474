/**
 * Loggers write to stderr only, one line each, prefixed with the source's name: a CLI's stdout
 * belongs to the reply (or to JSON lines). The level comes from LIVEAGENT_LOG (debug, info, warn,
 * error, silent); the default is warn so the CLI stays quiet.
 */
import type { Logger } from '../plugin-api.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
type Level = keyof typeof LEVELS;

export type LogSink = (level: Exclude<Level, 'silent'>, source: string, message: string, data?: unknown) => void;

function envLevel(): number {
  const raw = (process.env.LIVEAGENT_LOG ?? 'warn').toLowerCase();
  return raw in LEVELS ? LEVELS[raw as Level] : LEVELS.warn;
}

const stderrSink: LogSink = (level, source, message, data) => {
  const extra = data === undefined ? '' : ` ${safeJson(data)}`;
  process.stderr.write(`[${level}] ${source}: ${message}${extra}\n`);
};

function safeJson(v: unknown): string {
  if (v instanceof Error) return v.message;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

export function createLogger(source: string, sink: LogSink = stderrSink, threshold = envLevel()): Logger {
  const at = (level: Exclude<Level, 'silent'>) => (message: string, data?: unknown) => {
    if (LEVELS[level] >= threshold) sink(level, source, message, data);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Small display helpers. */
import type { Usage } from '../../../plugin-api.js';

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} m ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatTokens(n: number | undefined): string {
  if (!n) return '0';
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

export function usageShort(u: Usage): string {
  const cost = u.costUsd !== undefined ? ` · ${formatCost(u.costUsd)}` : '';
  return `${formatTokens(u.inputTokens)} in · ${formatTokens(u.outputTokens)} out${cost}`;
}

export function usageFull(u: Usage): Array<[string, number]> {
  const rows: Array<[string, number]> = [
    ['input', u.inputTokens],
    ['output', u.outputTokens],
  ];
  if (u.cacheReadTokens !== undefined) rows.push(['cache read', u.cacheReadTokens]);
  if (u.cacheWriteTokens !== undefined) rows.push(['cache write', u.cacheWriteTokens]);
  if (u.reasoningTokens !== undefined) rows.push(['reasoning', u.reasoningTokens]);
  return rows;
}

export function relativeTime(ts: number, now = Date.now()): string {
  const d = Math.max(0, now - ts);
  if (d < 60_000) return 'now';
  if (d < 3_600_000) return `${Math.floor(d / 60_000)}m`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)}h`;
  if (d < 7 * 86_400_000) return `${Math.floor(d / 86_400_000)}d`;
  return new Date(ts).toLocaleDateString();
}

/** One line describing a tool call's arguments, for the collapsed trace row. */
export function argsSummary(input: Record<string, unknown>): string {
  for (const key of ['command', 'file_path', 'path', 'pattern', 'query', 'url', 'prompt', 'text']) {
    const v = input[key];
    if (typeof v === 'string' && v) return v.length > 120 ? `${v.slice(0, 117)}…` : v;
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : json.length > 120 ? `${json.slice(0, 117)}…` : json;
}

export function newId(prefix: string): string {
  const rnd = typeof crypto !== 'undefined' && 'randomUUID' in crypto ? crypto.randomUUID().replace(/-/g, '').slice(0, 16) : Math.random().toString(36).slice(2, 18);
  return `${prefix}-${rnd}`;
}

/** Token counts as a meter shows them: 950, 1.2k, 12.3k, 200k, 1M, 1.5M. */
export function formatTokenCount(n: number): string {
  const trim = (x: number, digits: number) => x.toFixed(digits).replace(/\.0+$/, '');
  if (n < 1000) return String(Math.round(n));
  if (n < 100_000) return `${trim(n / 1000, 1)}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${trim(n / 1_000_000, 1)}M`;
}

/** USD with as many decimals as a small amount needs. */
export function formatCost(usd: number): string {
  if (usd <= 0) return '$0';
  if (usd < 0.0001) return '<$0.0001';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  if (usd < 1) return `$${usd.toFixed(3)}`;
  return `$${usd.toFixed(2)}`;
}

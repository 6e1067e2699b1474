/**
 * What `providers.list` and `mcp.status` answer (and the `mcp` broadcast carries): the runtime's
 * providers with the catalog's facts about their models, and the MCP servers' state. A service
 * that cannot tell adds nothing rather than failing the request.
 */
import type { ModelInfo, PluginContext } from '../../plugin-api.js';
import type { McpServerSummary, ModelSummary, ProviderSummary } from '../../lib/gateway-protocol/protocol.js';

type SummaryContext = Pick<PluginContext, 'runtime' | 'settings' | 'service'>;

export function mcpServerSummaries(ctx: Pick<PluginContext, 'service'>): McpServerSummary[] {
  const mcp = ctx.service('mcp');
  return (mcp?.servers() ?? []).map((s) => ({ name: s.name, state: s.state, ...(s.error ? { error: s.error } : {}), tools: s.tools, transport: s.transport }));
}

export function providerSummaries(ctx: SummaryContext): ProviderSummary[] {
  const settings = ctx.settings.get();
  return ctx.runtime.providers().map((p) => {
    let configured = false;
    try {
      configured = p.isConfigured(settings);
    } catch {
      /* a provider that cannot tell is not configured */
    }
    const known = catalogModels(ctx, p.id);
    return { id: p.id, displayName: p.displayName, configured, defaultModel: p.defaultModel, models: (p.models ?? []).map((m) => modelSummary(m, known)) };
  });
}

/** A model with its context window and prices when the catalog has them (never its guesses for unknown models). */
function modelSummary(m: ModelInfo, known: Map<string, ModelInfo>): ModelSummary {
  const out: ModelSummary = { id: m.id, ...(m.name ? { name: m.name } : {}) };
  // Without a catalog, the provider's own facts still count.
  const facts = known.get(m.id) ?? m;
  if (typeof facts?.contextWindow === 'number') out.contextWindow = facts.contextWindow;
  if (facts?.price && Object.keys(facts.price).length) out.price = { ...facts.price };
  return out;
}

function catalogModels(ctx: Pick<PluginContext, 'service'>, providerId: string): Map<string, ModelInfo> {
  try {
    return new Map((ctx.service('modelCatalog')?.models(providerId) ?? []).map((m) => [m.id, m]));
  } catch {
    return new Map(); // a catalog that cannot tell adds nothing
  }
}

/**
 * ProviderRequest → the streamGenerateContent body: contents, systemInstruction, tools
 * (functionDeclarations with converted schemas, plus googleSearch), toolConfig and
 * generationConfig (maxOutputTokens, thinkingConfig).
 *
 * SDK 0.24.1 types neither `thinkingConfig` nor the `googleSearch` tool nor thought parts; it
 * forwards the body as JSON untouched, so the body is built here in wire terms and cast once.
 */
import type { JsonObject, ModelInfo, ProviderRequest } from '../../plugin-api.js';
import { GEMINI_MEDIA_LIMITS, fitMedia } from '../../lib/provider-shared/media-limits.js';
import { toGeminiContents, type WireContent } from './history.js';
import { combinesSearchWithFunctions, maxOutputFor, modelThinks, thinkingRange } from './models.js';
import { toGeminiSchema } from './schema.js';
import type { GeminiConfig } from './settings.js';

export interface ThinkingConfig {
  includeThoughts?: boolean;
  thinkingBudget?: number;
}

export interface WireRequest {
  contents: WireContent[];
  systemInstruction?: { parts: Array<{ text: string }> };
  tools?: JsonObject[];
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig?: { maxOutputTokens?: number; thinkingConfig?: ThinkingConfig };
}

function thinkingConfig(req: ProviderRequest, cfg: GeminiConfig, models: ModelInfo[] | undefined): ThinkingConfig | undefined {
  if (!modelThinks(req.model, models)) return undefined;
  // The request's budget (a positive number) wins; else settings; else the model's default (dynamic).
  const budget = req.lean ? 0 : req.thinkingBudget && req.thinkingBudget > 0 ? req.thinkingBudget : cfg.thinkingBudget;
  const range = thinkingRange(req.model);
  if (budget === 0) {
    // Off where the model allows it; Pro cannot stop thinking, so it gets the least it takes.
    if (range.canDisable) return { thinkingBudget: 0 };
    return { ...(cfg.includeThoughts ? { includeThoughts: true } : {}), thinkingBudget: range.min };
  }
  const out: ThinkingConfig = {};
  if (cfg.includeThoughts) out.includeThoughts = true;
  if (budget !== undefined) out.thinkingBudget = budget < 0 ? -1 : Math.min(range.max, Math.max(range.min, budget));
  return Object.keys(out).length ? out : undefined;
}

/** `note` hears about settings the request could not honour (e.g. search dropped next to tools). */
export function buildGeminiRequest(req: ProviderRequest, cfg: GeminiConfig, providerId: string, models: ModelInfo[] | undefined, note?: (message: string) => void): WireRequest {
  // Images and PDFs over the API's limits go as notes, never as a request that always fails.
  const body: WireRequest = { contents: toGeminiContents(fitMedia(req.messages, GEMINI_MEDIA_LIMITS), providerId, cfg.foreignThinking === 'text') };

  const system = req.system
    .map((p) => p.text.trim())
    .filter(Boolean)
    .join('\n\n');
  if (system) body.systemInstruction = { parts: [{ text: system }] };

  const tools: JsonObject[] = [];
  if (req.tools.length) {
    const functionDeclarations = req.tools.map((t) => {
      const parameters = toGeminiSchema(t.inputSchema);
      return { name: t.name, description: t.description, ...(parameters ? { parameters } : {}) };
    });
    tools.push({ functionDeclarations });
    const c = req.toolChoice;
    if (c) {
      const fcc: NonNullable<WireRequest['toolConfig']>['functionCallingConfig'] =
        c === 'auto' ? { mode: 'AUTO' } : c === 'any' ? { mode: 'ANY' } : c === 'none' ? { mode: 'NONE' } : { mode: 'ANY', allowedFunctionNames: [c.name] };
      body.toolConfig = { functionCallingConfig: fcc };
    }
  }
  if (cfg.webSearch && !req.lean) {
    if (!req.tools.length || combinesSearchWithFunctions(req.model)) tools.push({ googleSearch: {} });
    else note?.(`webSearch is skipped for ${req.model} in rounds that offer tools: Gemini 2.x refuses googleSearch next to function calling`);
  }
  if (tools.length) body.tools = tools;

  const generationConfig: NonNullable<WireRequest['generationConfig']> = {};
  const limit = maxOutputFor(req.model, models);
  let maxOut = req.maxOutputTokens ?? cfg.maxOutputTokens;
  if (maxOut !== undefined && limit) maxOut = Math.min(maxOut, limit);
  if (maxOut !== undefined) generationConfig.maxOutputTokens = maxOut;
  const thinking = thinkingConfig(req, cfg, models);
  if (thinking) generationConfig.thinkingConfig = thinking;
  if (Object.keys(generationConfig).length) body.generationConfig = generationConfig;
  return body;
}

/**
 * Settings shapes every provider plugin shares: where the key and endpoint come from, a model
 * list entry, and the fields of a custom provider. Each plugin spreads its own request options
 * into these, so the error for a bad field names the same path in every format.
 */
import { z } from 'zod';

export const ModelInfoSchema = z.object({
  id: z.string().min(1),
  name: z.string().optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  thinking: z.boolean().optional(),
  cache: z.boolean().optional(),
  price: z.object({ input: z.number().optional(), output: z.number().optional(), cacheRead: z.number().optional(), cacheWrite: z.number().optional() }).optional(),
});

/** `providers.<id>`: key, endpoint and default model (plus the plugin's request options). */
export const connectionShape = {
  apiKey: z.string().optional(),
  apiKeyEnv: z.string().min(1).optional(),
  baseUrl: z.url().optional(),
  defaultModel: z.string().min(1).optional(),
};

/** A `customProviders[]` entry of one format (plus the plugin's request options). */
export function customProviderShape<F extends string>(format: F) {
  return {
    id: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must use only letters, digits, _ and -'),
    name: z.string().min(1).optional(),
    format: z.literal(format),
    baseUrl: z.url(),
    apiKey: z.string().optional(),
    apiKeyEnv: z.string().min(1).optional(),
    defaultModel: z.string().min(1).optional(),
    models: z.array(ModelInfoSchema).optional(),
  };
}

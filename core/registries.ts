/**
 * Registries for tools, providers and shared services. Each entry remembers the plugin that
 * registered it, so a clash names both plugins and unloading a plugin removes exactly its entries.
 */
import { z } from 'zod';
import type { Disposable, JsonObject, Provider, SchemaLike, ToolDefinition, ToolSpec } from '../plugin-api.js';
import { ConfigError, PluginError } from './errors.js';
import { ONE_OFF_PARSE } from './validate-once.js';

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const ToolDefinitionShape = z.object({
  name: z.string().regex(TOOL_NAME_PATTERN, 'must be 1-64 letters, digits, _ or -'),
  description: z.string().min(1, 'must not be empty'),
  parameters: z.custom<SchemaLike>((v) => !!v && typeof (v as SchemaLike).safeParse === 'function', 'must be a schema with safeParse'),
  execute: z.custom<Function>((v) => typeof v === 'function', 'must be a function'),
  modes: z.array(z.enum(['text', 'tools', 'agent-dev'])).optional(),
  concurrency: z.enum(['parallel', 'exclusive']).optional(),
  promptRules: z.array(z.string()).optional(),
});

const ProviderShape = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must use only letters, digits, _ and -'),
  displayName: z.string().min(1),
  defaultModel: z.string().min(1),
  isConfigured: z.custom<Function>((v) => typeof v === 'function', 'must be a function'),
  stream: z.custom<Function>((v) => typeof v === 'function', 'must be a function'),
});

/** JSON Schema for a tool's parameters: given, or derived from a zod 4 schema. */
export function jsonSchemaFor(tool: ToolDefinition): JsonObject {
  if (tool.jsonSchema) return tool.jsonSchema;
  const schema = tool.parameters as unknown;
  if (schema && typeof schema === 'object' && '_zod' in schema) {
    const js = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' }) as JsonObject;
    delete js.$schema;
    return js;
  }
  throw new ConfigError(`tool "${tool.name}": parameters is not a zod schema, so jsonSchema must be given`);
}

export interface ToolEntry {
  tool: ToolDefinition;
  plugin: string;
  spec: ToolSpec;
}

export class ToolRegistry {
  private entries = new Map<string, ToolEntry>();
  private listeners = new Set<() => void>();

  add(tool: ToolDefinition, plugin: string): Disposable {
    const shape = ToolDefinitionShape.safeParse(tool, ONE_OFF_PARSE);
    if (!shape.success) {
      const i = shape.error.issues[0]!;
      throw new PluginError(plugin, `plugin "${plugin}" registered an invalid tool${tool?.name ? ` "${tool.name}"` : ''}: ${i.path.join('.') || 'tool'} ${i.message}`);
    }
    const existing = this.entries.get(tool.name);
    if (existing) throw new PluginError(plugin, `plugin "${plugin}" registered tool "${tool.name}", which plugin "${existing.plugin}" already registered`);
    const params = tool.parameters as unknown;
    if (!tool.jsonSchema && !(params && typeof params === 'object' && '_zod' in params)) {
      throw new PluginError(plugin, `plugin "${plugin}": tool "${tool.name}": parameters is not a zod schema, so jsonSchema must be given`);
    }
    // Converted on first use (the first request that offers the tool): zod's JSON Schema
    // conversion is the larger part of a tool's registration, and boot pays it for every tool.
    let spec: ToolSpec | undefined;
    const entry: ToolEntry = {
      tool,
      plugin,
      get spec() {
        if (!spec) {
          try {
            spec = { name: tool.name, description: tool.description, inputSchema: jsonSchemaFor(tool) };
          } catch (err) {
            throw new PluginError(plugin, `plugin "${plugin}": ${(err as Error).message}`);
          }
        }
        return spec;
      },
    };
    this.entries.set(tool.name, entry);
    this.changed();
    return {
      dispose: () => {
        if (this.entries.get(tool.name) === entry) {
          this.entries.delete(tool.name);
          this.changed();
        }
      },
    };
  }

  get(name: string): ToolEntry | undefined {
    return this.entries.get(name);
  }

  list(): ToolEntry[] {
    return [...this.entries.values()];
  }

  /** Called whenever the set of tools changes (MCP servers come and go). */
  onChange(fn: () => void): Disposable {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }

  private changed() {
    for (const l of this.listeners) l();
  }
}

export class ProviderRegistry {
  private byId = new Map<string, { provider: Provider; plugin: string }>();

  add(provider: Provider, plugin: string): Disposable {
    const shape = ProviderShape.safeParse(provider, ONE_OFF_PARSE);
    if (!shape.success) {
      const i = shape.error.issues[0]!;
      throw new PluginError(plugin, `plugin "${plugin}" registered an invalid provider: ${i.path.join('.') || 'provider'} ${i.message}`);
    }
    const names = [provider.id, ...(provider.aliases ?? [])];
    for (const n of names) {
      const clash = this.byId.get(n);
      if (clash) throw new PluginError(plugin, `plugin "${plugin}" registered provider "${n}", which plugin "${clash.plugin}" already registered`);
    }
    const entry = { provider, plugin };
    for (const n of names) this.byId.set(n, entry);
    return {
      dispose: () => {
        for (const n of names) if (this.byId.get(n) === entry) this.byId.delete(n);
      },
    };
  }

  get(idOrAlias: string): Provider | undefined {
    return this.byId.get(idOrAlias)?.provider;
  }

  pluginOf(idOrAlias: string): string | undefined {
    return this.byId.get(idOrAlias)?.plugin;
  }

  list(): Provider[] {
    return [...new Set([...this.byId.values()].map((e) => e.provider))];
  }
}

export class ServiceRegistry {
  private services = new Map<string, { value: unknown; plugin: string }>();

  provide(key: string, value: unknown, plugin: string): Disposable {
    const clash = this.services.get(key);
    if (clash) throw new PluginError(plugin, `plugin "${plugin}" provides service "${key}", which plugin "${clash.plugin}" already provides`);
    const entry = { value, plugin };
    this.services.set(key, entry);
    return { dispose: () => void (this.services.get(key) === entry && this.services.delete(key)) };
  }

  get<T>(key: string): T | undefined {
    return this.services.get(key)?.value as T | undefined;
  }
}

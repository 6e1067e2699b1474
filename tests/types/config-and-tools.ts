// Type test (compiled by tests/unit/plugin-examples.test.ts against plugin-api.d.ts alone): a
// plugin's settings section and a tool's arguments are typed by their schemas, so no cast is
// needed. Each `@ts-expect-error` must see an error, or the compile fails.
import { z } from 'zod';
import { definePlugin, defineTool, type Plugin, type ToolDefinition } from 'liveagent/plugin-api';

const Settings = z.object({ units: z.enum(['C', 'F']).default('C'), cities: z.array(z.string()).optional() });

export const typed = definePlugin({
  name: 'typetest-typed',
  settingsSchema: Settings,
  apply(ctx) {
    const units: 'C' | 'F' = ctx.config.units;
    const cities: string[] | undefined = ctx.config.cities;
    // @ts-expect-error a key the schema does not have
    void ctx.config.colour;
    void units, cities;
  },
});

export const untyped = definePlugin({
  name: 'typetest-untyped',
  apply(ctx) {
    // @ts-expect-error without a settingsSchema the section is unknown: parse it, do not cast it
    void ctx.config.units;
  },
});

// A typed plugin is still a Plugin: hosts take lists of them.
export const all: Plugin[] = [typed, untyped];

// @ts-expect-error the schema's output ({ units: 'C' | 'F' }) is not the Config this plugin claims
export const mismatched: Plugin<{ units: number }> = { name: 'typetest-wrong', settingsSchema: Settings, apply() {} };

export const forecast = defineTool({
  name: 'forecast',
  description: 'A forecast.',
  parameters: z.object({ city: z.string(), days: z.number().int().default(1) }),
  async execute(args) {
    const city: string = args.city;
    const days: number = args.days;
    // @ts-expect-error not in the schema
    void args.country;
    return { content: [{ type: 'text', text: `${city} ${days}` }] };
  },
});

// A tool written with defineTool registers as is; so does one written inline, with the same inference.
export const registering = definePlugin({
  name: 'typetest-tools',
  apply(ctx) {
    ctx.registerTool(forecast);
    ctx.registerTool({
      name: 'inline',
      description: 'Inline.',
      parameters: z.object({ n: z.number() }),
      async execute(args) {
        const n: number = args.n;
        // @ts-expect-error args are not any
        void args.m;
        return { content: [{ type: 'text', text: String(n) }] };
      },
    });
  },
});

export const asDefinition: ToolDefinition = forecast;

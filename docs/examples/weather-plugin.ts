// A plugin with a settings section, a tool with typed arguments, a service for other plugins,
// and two events: its own `weather_alert`, and a `notice` the WebUI shows under the reply.
import { z } from 'zod';
import type { Plugin } from 'liveagent/plugin-api';
import { createWeatherService } from './weather-service.js';

/** settings.json → `pluginSettings["acme-weather"]`; `ctx.config` gets this output type. */
const Settings = z.object({ units: z.enum(['C', 'F']).default('C') });

export default {
  name: 'acme-weather',
  version: '1.0.0',
  settingsSchema: Settings,
  apply(ctx) {
    const weather = createWeatherService(ctx.config.units);
    ctx.provide('weather', weather);
    ctx.registerTool({
      name: 'weather',
      description: "Today's weather for a city.",
      parameters: z.object({ city: z.string().min(1) }),
      concurrency: 'parallel',
      async execute(args, tool) {
        const f = weather.forecast(args.city); // args: { city: string }, from the schema
        if (f.rain) {
          tool.emit('weather_alert', { city: f.city, message: `Rain expected in ${f.city}` });
          tool.emit('notice', { kind: 'weather', message: `Rain expected in ${f.city}` });
        }
        return { content: [{ type: 'text', text: `${f.city}: ${f.temperature}°${f.units}${f.rain ? ', rain' : ''}` }] };
      },
    });
  },
} satisfies Plugin<z.output<typeof Settings>>;

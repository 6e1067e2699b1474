// A second plugin that consumes the weather service and watches the weather plugin's events,
// without importing a single file of it: `ctx.service('weather')` is typed by ServiceMap.
import { z } from 'zod';
import type { Plugin } from 'liveagent/plugin-api';

export const alertsSeen: string[] = [];

export default {
  name: 'acme-umbrella',
  requires: ['acme-weather'],
  apply(ctx) {
    ctx.registerTool({
      name: 'umbrella',
      description: 'Whether to take an umbrella to a city today.',
      parameters: z.object({ city: z.string().min(1) }),
      async execute({ city }) {
        const weather = ctx.service('weather');
        if (!weather) return { content: [{ type: 'text', text: 'No weather service.' }], isError: true };
        return { content: [{ type: 'text', text: weather.forecast(city).rain ? `Take an umbrella to ${city}.` : 'No umbrella needed.' }] };
      },
    });
    // Events of every conversation; a plugin event arrives as `custom` with its name.
    const watch = ctx.runtime.onEvent((ev) => {
      if (ev.type === 'custom' && ev.name === 'weather_alert') alertsSeen.push(String(ev.payload.message));
    });
    ctx.subscriptions.push(watch);
  },
} satisfies Plugin;

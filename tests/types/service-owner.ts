// Type test: the plugin that owns a service and an event declares them in the contract's open
// interfaces. service-consumer.ts uses both without importing this file.
import { definePlugin } from 'liveagent/plugin-api';

export interface ClockService {
  now(): number;
}

declare module 'liveagent/plugin-api' {
  interface ServiceMap {
    'typetest.clock': ClockService;
  }
  interface PluginEvents {
    typetest_tick: { at: number };
  }
}

export default definePlugin({
  name: 'typetest-clock',
  apply(ctx) {
    ctx.provide('typetest.clock', { now: () => Date.now() });
    // @ts-expect-error a declared key takes its declared type
    ctx.provide('typetest.clock', { now: () => 'noon' });
    // A key nobody declares takes anything.
    ctx.provide('typetest.undeclared', 42);
  },
});

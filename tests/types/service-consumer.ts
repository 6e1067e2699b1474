// Type test: a consumer gets another plugin's service and event types from the contract's
// merged interfaces; it imports nothing of service-owner.ts (the import-boundary test forbids
// that between plugins).
import { definePlugin, pluginEvent, type ToolContext } from 'liveagent/plugin-api';

export default definePlugin({
  name: 'typetest-consumer',
  requires: ['typetest-clock'],
  apply(ctx) {
    const t: number | undefined = ctx.service('typetest.clock')?.now();
    // @ts-expect-error the service has no such method
    ctx.service('typetest.clock')?.later();
    // @ts-expect-error an undeclared service is unknown until you name its type
    ctx.service('typetest.undeclared')?.toFixed();
    const named = ctx.service<number>('typetest.undeclared');
    ctx.runtime.onEvent((ev) => {
      const tick = pluginEvent(ev, 'typetest_tick');
      const at: number | undefined = tick?.at;
      // @ts-expect-error an undeclared event name
      pluginEvent(ev, 'typetest_tock');
      void at;
    });
    void t, named;
  },
});

export function emitTicks(tool: ToolContext): void {
  tool.emit('typetest_tick', { at: 1 });
  // @ts-expect-error a declared event takes its declared payload
  tool.emit('typetest_tick', { at: 'one' });
  // Undeclared names take any JSON object.
  tool.emit('typetest_other', { any: 'thing' });
}

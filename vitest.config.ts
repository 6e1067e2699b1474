import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Third-party plugin fixtures import `liveagent/plugin-api` at runtime. A host resolves it with
  // a module hook (core/plugin-api-resolve.ts); vitest transforms plugin files itself, outside
  // Node's loader, so it is told the same here: the sources of the runtime half.
  resolve: { alias: { 'liveagent/plugin-api': fileURLToPath(new URL('./core/define-plugin.ts', import.meta.url)) } },
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // CI has 2 cores; the e2e browser tests and MCP servers are heavy, keep parallelism modest.
    maxWorkers: 2,
  },
});

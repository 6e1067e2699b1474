import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // CI has 2 cores; the e2e browser tests and MCP servers are heavy, keep parallelism modest.
    maxWorkers: 2,
  },
});

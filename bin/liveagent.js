#!/usr/bin/env node
// The `liveagent` command. The TypeScript sources are compiled to dist/ by `npm install`
// (the prepare script); this shim only points there, with a clear message if that step failed.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/hosts/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('liveagent: the build output is missing; run `npm run build` in the liveagent folder\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));

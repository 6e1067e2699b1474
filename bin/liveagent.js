#!/usr/bin/env node
// The `liveagent` command. The TypeScript sources are compiled to dist/ by `npm install`
// (the prepare script), which also bundles the CLI (hosts/cli/build-bundle.mjs) so it starts
// faster. This shim runs the bundle when it is at least as new as the compiled entry, else the
// compiled files (a `tsc`-only rebuild is never shadowed by a stale bundle), with a clear
// message if the build never ran. LIVEAGENT_NO_BUNDLE=1 forces the unbundled files.
import { statSync } from 'node:fs';

const compiled = new URL('../dist/hosts/cli/main.js', import.meta.url);
const bundled = new URL('../dist/hosts/cli-bundle/main.js', import.meta.url);
const mtime = (url) => statSync(url, { throwIfNoEntry: false })?.mtimeMs;
const compiledAt = mtime(compiled);
if (compiledAt === undefined) {
  process.stderr.write('liveagent: the build output is missing; run `npm run build` in the liveagent folder\n');
  process.exit(1);
}
const bundledAt = process.env.LIVEAGENT_NO_BUNDLE === '1' ? undefined : mtime(bundled);
const { main } = await import((bundledAt !== undefined && bundledAt >= compiledAt ? bundled : compiled).href);
process.exitCode = await main(process.argv.slice(2));

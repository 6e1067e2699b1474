/**
 * Entry of the `liveagent` CLI: dispatches to chat, serve and desktop. Returns the exit code.
 */
import { readFileSync } from 'node:fs';
import { CliUsageError, USAGE, parseChatArgs, parseCompactArgs, parseServeArgs, wantsJson } from './args.js';
import { EXIT, reportFailure } from './exit-codes.js';

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'chat': {
        const { runChat } = await import('./chat.js');
        return await runChat(parseChatArgs(rest));
      }
      case 'compact': {
        const { runCompact } = await import('./compact.js');
        return await runCompact(parseCompactArgs(rest));
      }
      case 'serve': {
        const opts = parseServeArgs(rest);
        const { runServe } = await import('./serve.js');
        return await runServe(opts);
      }
      case 'desktop': {
        const { runDesktop } = await import('./desktop.js');
        return await runDesktop();
      }
      case '--version':
      case '-v': {
        const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
        process.stdout.write(`${pkg.version}\n`);
        return EXIT.ok;
      }
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return EXIT.ok;
      case undefined:
        process.stderr.write(`${USAGE}\n`);
        return EXIT.usage;
      default:
        throw new CliUsageError(`unknown command "${command}" (try: chat, compact, serve, desktop, --help)`);
    }
  } catch (err) {
    // With --json, stdout carries only JSON lines: a failure before the run is one too.
    const json = (command === 'chat' || command === 'compact') && wantsJson(rest);
    return reportFailure(err, { stdout: process.stdout, stderr: process.stderr }, json);
  }
}

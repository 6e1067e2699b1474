/**
 * Entry of the `liveagent` CLI: dispatches to chat, compact, conversations, cron, serve, desktop
 * and help (hosts/cli/help.ts). Returns the exit code.
 */
import { installCrashGuard } from '../../core/crash-guard.js';
import { CliUsageError, USAGE, parseChatArgs, parseCompactArgs, parseConversationsArgs, parseServeArgs, wantsJson } from './args.js';
import { EXIT, reportFailure } from './exit-codes.js';

/**
 * Once a command that ran a kernel is done, plugin work left behind (a tool that ignored the
 * stop, a timer, a socket) must not keep the process alive: exit with the code after a moment.
 * Unreferenced, so a process with nothing left running exits at once, as before.
 */
function leave(code: number): number {
  setTimeout(() => process.exit(code), 1000).unref();
  return code;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // For the whole process: a plugin's stray timer after its kernel stopped is still caught.
  installCrashGuard();
  try {
    // `liveagent chat --help` is help, not an unknown flag of chat.
    const flags = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
    if (command && !command.startsWith('-') && command !== 'help' && (flags.includes('--help') || flags.includes('-h'))) {
      const { helpText } = await import('./help.js');
      process.stdout.write(`${helpText(command)}\n`);
      return EXIT.ok;
    }
    switch (command) {
      case 'chat': {
        const { runChat } = await import('./chat.js');
        return leave(await runChat(parseChatArgs(rest)));
      }
      case 'compact': {
        const { runCompact } = await import('./compact.js');
        return leave(await runCompact(parseCompactArgs(rest)));
      }
      case 'conversations': {
        const { runConversations } = await import('./conversations.js');
        return leave(await runConversations(parseConversationsArgs(rest)));
      }
      case 'cron': {
        const { runCron } = await import('./cron.js');
        return leave(await runCron(rest));
      }
      case 'serve': {
        const opts = parseServeArgs(rest);
        const { runServe } = await import('./serve.js');
        return leave(await runServe(opts));
      }
      case 'desktop': {
        const { runDesktop } = await import('./desktop.js');
        return await runDesktop();
      }
      case '--version':
      case '-v': {
        const { version } = await import('./help.js');
        process.stdout.write(`${version()}\n`);
        return EXIT.ok;
      }
      case '--help':
      case '-h':
      case 'help': {
        const { helpText } = await import('./help.js');
        process.stdout.write(`${helpText(rest[0])}\n`);
        return EXIT.ok;
      }
      case undefined:
        process.stderr.write(`${USAGE}\n\nliveagent help: every command, flag and exit code\n`);
        return EXIT.usage;
      default:
        throw new CliUsageError(`unknown command "${command}" (try: chat, compact, conversations, cron, serve, desktop, help, --version)`);
    }
  } catch (err) {
    // With --json, stdout carries only JSON lines: a failure before the run is one too.
    const json = (command === 'chat' || command === 'compact' || command === 'conversations' || command === 'cron') && wantsJson(rest);
    return reportFailure(err, { stdout: process.stdout, stderr: process.stderr }, json);
  }
}

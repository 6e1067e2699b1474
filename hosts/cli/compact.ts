/**
 * `liveagent compact --conversation ID`: compact a stored conversation now (trigger `manual`).
 * Prints what the checkpoint covers and the tokens before and after; with --json, one JSON line
 * per compaction event, then the outcome. Exit 0 when compacted or there was nothing to compact,
 * 1 when the summary failed (the history is left as it was), 2 on bad usage or an unknown id.
 */
import type { LifecycleEvent } from '../../plugin-api.js';
import { createKernel, type Kernel } from '../../core/kernel.js';
import { describeError } from '../../core/errors.js';
import { builtinPlugins } from '../builtins.js';
import type { CompactArgs } from './args.js';
import type { ChatIo } from './chat.js';
import { EXIT, exitCodeFor } from './exit-codes.js';

export async function runCompact(args: CompactArgs, io: ChatIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let kernel: Kernel | undefined;
  try {
    kernel = await createKernel({ builtins: await builtinPlugins() });
    const events = kernel.runtime.onEvent((e: LifecycleEvent) => {
      if (e.conversationId !== args.conversation) return;
      if (args.json) io.stdout.write(JSON.stringify(e) + '\n');
      else if (e.type === 'compaction' && e.payload.phase === 'start') io.stderr.write('compacting…\n');
    });
    const outcome = await kernel.runtime.compact(args.conversation);
    events.dispose();
    if (args.json) io.stdout.write(JSON.stringify({ type: 'compaction_outcome', ...outcome }) + '\n');
    else if (outcome.status === 'compacted' && outcome.checkpoint) {
      const c = outcome.checkpoint;
      const by = c.provider ? ` by ${c.provider} · ${c.model}` : '';
      const what = c.kind === 'summary' ? `${c.coveredMessageCount} messages summarized${by}` : `${c.prunedToolCallIds.length} old tool outputs pruned`;
      io.stdout.write(`compacted ${args.conversation}: ${what}; context ${c.tokensBefore} → ${c.tokensAfter} tokens\n`);
    } else if (outcome.status === 'skipped') io.stdout.write(`nothing to compact: ${outcome.reason ?? ''}\n`);
    else io.stderr.write(`liveagent: compaction failed, the history is unchanged: ${outcome.reason ?? ''}\n`);
    return outcome.status === 'failed' ? EXIT.failure : EXIT.ok;
  } catch (err) {
    io.stderr.write(`liveagent: ${describeError(err)}\n`);
    return exitCodeFor(err);
  } finally {
    await kernel?.shutdown();
  }
}

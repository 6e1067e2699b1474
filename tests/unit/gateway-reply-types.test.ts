/**
 * Request → reply pairs are typed in one place (lib/gateway-protocol/protocol.ts ReplyMap): the
 * WebUI's `request()` returns the reply its message gets, so no store guesses at a shape.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { CompactionOutcome } from '../../plugin-api.js';
import type { ConversationSummary, McpServerSummary, ProviderSummary, ReplyMap, ReplyOf, RunStartedReply } from '../../lib/gateway-protocol/protocol.js';
import type { GatewayClient } from '../../webui/src/api/client.js';

type Req = GatewayClient['request'];

describe('gateway reply types', () => {
  it('ReplyOf maps each request to its reply, chat_queue by action', () => {
    expectTypeOf<ReplyOf<{ type: 'conversations.list' }>>().toEqualTypeOf<{ items: ConversationSummary[] }>();
    expectTypeOf<ReplyOf<{ type: 'providers.list' }>>().toEqualTypeOf<{ providers: ProviderSummary[] }>();
    expectTypeOf<ReplyOf<{ type: 'mcp.restart'; name: string }>>().toEqualTypeOf<{ servers: McpServerSummary[] }>();
    expectTypeOf<ReplyOf<{ type: 'conversations.delete'; conversationId: string }>>().toEqualTypeOf<{ conversationId: string; deleted: true }>();
    expectTypeOf<ReplyOf<{ type: 'chat_queue'; item: { action: 'compact_now'; conversationId: string } }>>().toEqualTypeOf<CompactionOutcome>();
    expectTypeOf<ReplyOf<{ type: 'chat_queue'; item: { action: 'send'; clientRequestId: string; text: string } }>>().toEqualTypeOf<RunStartedReply>();
    expectTypeOf<ReplyMap['conversations.usage']['unpricedRounds']>().toEqualTypeOf<number>();
  });

  it("the WebUI client's request() returns the typed reply", () => {
    const request = (() => undefined) as unknown as Req;
    const usage = () => request({ type: 'conversations.usage', conversationId: 'c' });
    expectTypeOf<Awaited<ReturnType<typeof usage>>>().toEqualTypeOf<ReplyMap['conversations.usage']>();
    const compact = () => request({ type: 'chat_queue', item: { action: 'compact_now', conversationId: 'c' } });
    expectTypeOf<Awaited<ReturnType<typeof compact>>>().toEqualTypeOf<CompactionOutcome>();
    // A plugin's own type names its reply.
    const ext = () => request<{ tasks: string[] }>({ type: 'cron.list' });
    expectTypeOf<Awaited<ReturnType<typeof ext>>>().toEqualTypeOf<{ tasks: string[] }>();
  });
});

// Type test: the services several plugins implement are declared in the contract itself
// (ServiceMap `history` and `uploads`): a consumer gets them typed and a third-party backend
// provides its own, importing no plugin's files.
import { definePlugin, type ConversationSummary, type HistoryService, type UploadStageResult } from 'liveagent/plugin-api';

/** A third-party history backend: everything in memory. */
function memoryHistory(): HistoryService {
  const none = async () => undefined;
  return {
    listConversations: async (): Promise<ConversationSummary[]> => [],
    getConversation: none,
    renameConversation: async () => false,
    setTitle: async () => false,
    watchConversations: async () => ({ dispose() {} }),
    deleteConversation: async () => false,
    conversationExists: async () => false,
    setConversationMeta: none,
    getUsage: async () => [],
    startSegment: none,
  };
}

export const backend = definePlugin({
  name: 'typetest-history-backend',
  apply(ctx) {
    ctx.provide('history', memoryHistory());
    // @ts-expect-error a history backend must implement the whole service
    ctx.provide('history', { listConversations: async () => [] });
  },
});

export const consumer = definePlugin({
  name: 'typetest-history-consumer',
  async apply(ctx) {
    const titles: Array<string | null> = (await ctx.service('history')?.listConversations({ search: 'x' }))?.map((c) => c.title) ?? [];
    const detail = await ctx.service('history')?.getConversation('c', { limit: 10 });
    const status: 'partial' | 'complete' | undefined = detail?.messages[0]?.status;
    // @ts-expect-error listConversations takes options, not a string
    await ctx.service('history')?.listConversations('x');
    const staged: UploadStageResult | undefined = await ctx.service('uploads')?.stageBytes(new Uint8Array([1]), 'a.txt');
    const block = ctx.service('uploads')?.block(staged?.record.uploadId ?? '');
    const kind: 'attachment' | undefined = block?.type;
    // @ts-expect-error the uploads service has no such method
    ctx.service('uploads')?.remove('id');
    void titles, status, kind;
  },
});

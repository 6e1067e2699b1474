/**
 * The `history` service: what hosts and other plugins (the gateway/WebUI, the CLI, the title and
 * compaction plugins) use to browse and manage stored conversations. It is a contract two
 * backends implement (this plugin and history-postgres), so its types are public: HistoryService
 * and the types it needs are in plugin-api.d.ts, under ServiceMap `history`, and other plugins
 * get it typed with `ctx.service('history')`, importing nothing from here. They are re-exported
 * below for this plugin's own files.
 */
export type {
  ConversationChange,
  ConversationDetail,
  ConversationPage,
  ConversationSummary,
  HistoryMessage,
  HistoryService,
  ListConversationsOptions,
  SegmentInfo,
  StartSegmentOptions,
  UsageRecord,
} from '../../plugin-api.js';

/** The key the service is provided under (lib/history-shared, which both backends share). */
export { HISTORY_SERVICE } from '../../lib/history-shared/queries.js';

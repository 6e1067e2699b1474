/**
 * The uploads plugin: files users attach, staged under `<home>/uploads` (store.ts), referenced
 * from history by attachment blocks, and expanded for each request into what the model reads
 * (policy.ts, expand.ts). It provides the `uploads` service (service.ts) to the gateway and the
 * CLI, and the HTTP routes `POST /api/uploads` and `GET /api/uploads/<id>` on the gateway
 * (http.ts). Uploads older than `uploads.retentionDays` are removed at start-up.
 */
import type { AttachmentBlock, ExecutionMode, Settings } from '../../plugin-api.js';
import { MessageStages, definePlugin } from '../../core/define-plugin.js';
import { sendJsonError } from '../../lib/http/json-reply.js';
import { formatSize } from '../../lib/provider-shared/attachments.js';
import { getUpload, postUpload } from './http.js';
import { ContextPolicy } from './policy.js';
import { UPLOADS_SERVICE, attachmentBlock, type UploadsService } from './service.js';
import { UploadsSettingsSchema, uploadsSettings } from './settings.js';
import { UploadError, UploadStore, type CollectResult } from './store.js';

export { UPLOADS_SERVICE, type UploadsService } from './service.js';

// The service's type and its ServiceMap key are in the contract (plugin-api.d.ts): any plugin gets `ctx.service('uploads')` typed.

/** The mode a run will have: its own, else the settings' default, else `tools` (as the kernel decides). */
function effectiveMode(mode: ExecutionMode | undefined, settings: Settings): ExecutionMode {
  return mode ?? settings.defaultMode ?? 'tools';
}

const uploadsPlugin = definePlugin({
  name: 'uploads',
  settingsKey: 'uploads',
  settingsSchema: UploadsSettingsSchema,
  apply(ctx) {
    const settings = () => uploadsSettings(ctx.settings.get());
    const store = new UploadStore(ctx.paths.uploads, { maxBytes: () => settings().maxBytes, logger: ctx.logger });
    // In the background: a first token never waits on old uploads being removed (staging does).
    const collected: Promise<CollectResult> = store.collect(settings().retentionDays).catch((err: Error) => {
      ctx.reportFailure(`removing old uploads failed: ${err.message}`);
      return { removed: [] };
    });

    const service: UploadsService = {
      stage: (source, opts) => store.stage(source, opts),
      stageFile: (file, name) => store.stageFile(file, name),
      stageBytes: (bytes, name) => store.stageBytes(bytes, name),
      get: (id) => store.get(id),
      block(uploadId) {
        const rec = store.get(uploadId);
        if (!rec) throw new UploadError('not_found', `unknown upload "${uploadId}" (it was never staged here, or it was removed after uploads.retentionDays)`);
        void store.touch(rec);
        return attachmentBlock(rec);
      },
      checkMessage(blocks: AttachmentBlock[], mode?: ExecutionMode) {
        if (!blocks.length) return;
        const m = effectiveMode(mode, ctx.settings.get());
        if (m === 'text') {
          throw new UploadError('bad_request', `attachments need a tools mode (tools or agent-dev), and this message would run in text mode: ${blocks.map((b) => JSON.stringify(b.name)).join(', ')}`);
        }
        const total = blocks.reduce((n, b) => n + b.size, 0);
        const max = settings().maxMessageBytes;
        if (total > max) throw new UploadError('too_large', `the attachments come to ${formatSize(total)}, over the ${formatSize(max)} one message may carry (uploads.maxMessageBytes)`);
      },
      settings,
      collected: () => collected,
    };
    ctx.provide(UPLOADS_SERVICE, service);

    const policy = new ContextPolicy(store);
    ctx.sessionHooks.messages.tap((messages, rc) => policy.apply(messages, rc), { stage: MessageStages.CONTEXT_POLICY });

    // The gateway may load after this plugin: its routes are added once every plugin is in.
    ctx.hooks.ready.tap(() => {
      const gateway = ctx.service('gateway');
      if (!gateway || typeof gateway.registerHttpRoute !== 'function') return;
      ctx.subscriptions.push(
        gateway.registerHttpRoute('POST', '/api/uploads', (req, res, url) => {
          if (url.pathname !== '/api/uploads') return sendJsonError(res, 404, 'not_found', `no such route: POST ${url.pathname}`);
          return postUpload(store, req, res, url);
        }),
        gateway.registerHttpRoute('GET', '/api/uploads', (req, res, url) => getUpload(store, req, res, url)),
      );
    });
  },
});

export default uploadsPlugin;

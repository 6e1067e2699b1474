/**
 * The `uploads` service: how the gateway and the CLI stage files and turn them into attachment
 * blocks. Other plugins `import type { UploadsService } from '../uploads/service.js'` and get it
 * with `ctx.service<UploadsService>(UPLOADS_SERVICE)`.
 */
import type { AttachmentBlock, ExecutionMode } from '../../plugin-api.js';
import type { UploadsSettings } from './settings.js';
import { MAX_ORIGINAL_CHARS } from './names.js';
import type { CollectResult, StageOptions, StageResult, UploadRecord } from './store.js';

export { UploadError, type CollectResult, type StageOptions, type StageResult, type UploadRecord } from './store.js';

/** The key the service is provided under. */
export const UPLOADS_SERVICE = 'uploads';

/** What HTTP and the gateway answer for a staged file. */
export interface UploadInfo {
  uploadId: string;
  /** The name the client gave. */
  name: string;
  /** Absolute path of the stored file. */
  path: string;
  size: number;
  mediaType: string;
}

export interface UploadsService {
  /** Stream bytes into the store (an HTTP body, a file); refuses past `uploads.maxBytes` and removes the partial file. */
  stage(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts?: StageOptions): Promise<StageResult>;
  /** Stage a file from disk (the CLI's `--attach`). */
  stageFile(file: string, name?: string): Promise<StageResult>;
  /** Stage bytes held in memory (the gateway's inline attachments). */
  stageBytes(bytes: Buffer, name: string): Promise<StageResult>;
  /** The stored upload, or undefined when the id is unknown (or its file is gone). */
  get(uploadId: string): UploadRecord | undefined;
  /** The attachment block for a stored upload; throws an UploadError `not_found` naming the id. */
  block(uploadId: string): AttachmentBlock;
  /**
   * Check a message's attachments before it is sent: uploads are for the tools modes only (an
   * UploadError `bad_request` in text mode) and together at most `uploads.maxMessageBytes`
   * (`too_large`). `mode` is the run's, when given; else the default mode from settings.
   */
  checkMessage(blocks: AttachmentBlock[], mode?: ExecutionMode): void;
  /** The section in force, defaults filled in. */
  settings(): UploadsSettings;
  /** Start-up garbage collection (removals of uploads past `uploads.retentionDays`), once it is done. */
  collected(): Promise<CollectResult>;
}

/**
 * Why a client's file name is refused before any byte is read (HTTP's `?name=`, the desktop
 * port's upload), or null. Hostile names that pass (`../x`, NULs) are the store's job: kept as
 * metadata only, stored under a safe name.
 */
export function uploadNameError(name: unknown): string | null {
  if (typeof name !== 'string' || !name.trim()) return 'a file name is required';
  if (name.length > MAX_ORIGINAL_CHARS) return `name: must be at most ${MAX_ORIGINAL_CHARS} characters`;
  return null;
}

/** The wire form of a record. */
export function uploadInfo(r: UploadRecord): UploadInfo {
  return { uploadId: r.uploadId, name: r.name, path: r.path, size: r.size, mediaType: r.mediaType };
}

/** The attachment block history stores for a record. */
export function attachmentBlock(r: UploadRecord): AttachmentBlock {
  return { type: 'attachment', uploadId: r.uploadId, name: r.name, path: r.path, mediaType: r.mediaType, size: r.size };
}

/**
 * The `uploads` service: how the gateway and the CLI stage files and turn them into attachment
 * blocks. Its type is public (UploadsService in plugin-api.d.ts, under ServiceMap `uploads`):
 * other plugins get it typed with `ctx.service('uploads')` and import nothing from here.
 */
import type { AttachmentBlock } from '../../plugin-api.js';
import { MAX_ORIGINAL_CHARS } from './names.js';
import type { UploadRecord } from './store.js';

export type { UploadsService } from '../../plugin-api.js';

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

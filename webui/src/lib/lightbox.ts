/**
 * The one image viewer of the page: any thumbnail opens it on its message's images (arrow keys
 * step through them). Module state, not a store: nothing else reads it.
 */
import { reactive } from 'vue';
import type { InjectionKey } from 'vue';
import type { MediaImage } from './media.js';

export const lightbox = reactive({ open: false, images: [] as MediaImage[], index: 0 });
/** Focus goes back here when the viewer closes. */
let opener: HTMLElement | null = null;

export function openLightbox(images: MediaImage[], index: number, from?: HTMLElement | null): void {
  if (!images.length) return;
  lightbox.images = images;
  lightbox.index = Math.min(Math.max(0, index), images.length - 1);
  lightbox.open = true;
  opener = from ?? (document.activeElement as HTMLElement | null);
}

export function closeLightbox(): void {
  lightbox.open = false;
  lightbox.images = [];
  const back = opener;
  opener = null;
  if (back?.isConnected) back.focus();
}

/** Step by `d`, wrapping around. */
export function stepLightbox(d: number): void {
  const n = lightbox.images.length;
  if (n) lightbox.index = (((lightbox.index + d) % n) + n) % n;
}

/**
 * A reply provides this so its tool-result thumbnails open the viewer on all the images of the
 * reply, not just their own call's.
 */
export const REPLY_IMAGES: InjectionKey<{ open(key: string, from: HTMLElement | null): boolean }> = Symbol('reply-images');

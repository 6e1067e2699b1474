/**
 * Build of the WebUI. `npx vite build --config webui/vite.config.ts` from the repo root writes
 * webui/dist, which the server host serves at `/` (and the Electron host loads from disk, hence
 * the relative base).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: './',
  plugins: [vue()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 900,
  },
  server: {
    // `npx vite --config webui/vite.config.ts` for development: proxy the gateway of a running server host.
    proxy: { '/ws': { target: process.env.LIVEAGENT_DEV_SERVER ?? 'http://127.0.0.1:7420', ws: true } },
  },
});

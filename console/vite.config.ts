import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The web console (issue #16): built by `npm run build:console` (part of `prepare`, so of `npm ci`)
 * into dist/console, which `src/http/console.ts` serves. Everything is bundled: no CDN, no web fonts,
 * no source maps shipped; hashed file names under assets/ are cached for a year.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});

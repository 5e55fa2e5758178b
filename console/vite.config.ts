// The console's build: served by the management server under /console (server/console/static.py), so every asset
// URL is prefixed with /console/ and hashed (the server marks /console/assets/* immutable).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  // JSX through Vite's own transformer with Preact's automatic runtime: no Babel preset needed.
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    // The console test checks the budget (250 KB gzip for all JS); Vite's own warning is only a hint.
    chunkSizeWarningLimit: 200,
  },
});

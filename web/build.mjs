// `npm run build`: bundles src/main.ts into dist/app.js (minified) and
// copies the page and its style sheet next to it. reef-view embeds dist/.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(here, 'src', 'main.ts')],
  outfile: join(dist, 'app.js'),
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of ['index.html', 'style.css']) copyFileSync(join(here, 'src', f), join(dist, f));
console.log('web/dist: app.js, index.html, style.css');

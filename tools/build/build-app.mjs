// Bundles one app into dist/<app root>/main.js: the workspace libs are compiled in, npm
// packages stay external and load from node_modules at run time. A `src/**/*-child.ts`
// file is the entry of a child process the app forks, bundled beside it as <name>.js with
// its npm packages compiled in too: a sandboxed child may read its one file only.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

const projectRoot = process.argv[2];
if (!projectRoot) {
  console.error('usage: node tools/build/build-app.mjs <project root>');
  process.exit(2);
}
const workspaceRoot = resolve(import.meta.dirname, '..', '..');

const keepNpmPackagesExternal = {
  name: 'external-npm-packages',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@envengine/') ? undefined : { path: args.path, external: true },
    );
  },
};

const childEntries = readdirSync(join(workspaceRoot, projectRoot, 'src'), { recursive: true })
  .filter((file) => file.endsWith('-child.ts'))
  .map((file) => ({ in: join(projectRoot, 'src', file), out: basename(file, '.ts') }));

const common = { absWorkingDir: workspaceRoot, outdir: join('dist', projectRoot), bundle: true, platform: 'node', format: 'esm', target: 'node24', sourcemap: true, logLevel: 'warning' };
await build({ ...common, entryPoints: [{ in: join(projectRoot, 'src', 'main.ts'), out: 'main' }], plugins: [keepNpmPackagesExternal] });
if (childEntries.length > 0) await build({ ...common, entryPoints: childEntries });

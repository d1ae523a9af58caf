// Bundles one app into dist/<app root>/main.js: the workspace libs are compiled in, npm
// packages stay external and load from node_modules at run time. A `src/**/*-child.ts`
// file is the entry of a child process the app forks, and a `src/**/*-child-<part>.ts` one
// a module that child imports later: each is bundled beside main.js as <name>.js with its
// npm packages compiled in too, since a sandboxed child may read its own files only. Their
// source maps are written beside them but not linked: the sandbox cannot read them, and
// Node would look for them at every child's start.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

// The output directory is dist/<project root> unless a test names another.
const [projectRoot, outdir = join('dist', projectRoot ?? '')] = process.argv.slice(2);
if (!projectRoot) {
  console.error('usage: node tools/build/build-app.mjs <project root> [output directory]');
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
  .filter((file) => /-child(-[a-z]+)*\.ts$/.test(file))
  .map((file) => ({ in: join(projectRoot, 'src', file), out: basename(file, '.ts') }));

const common = { absWorkingDir: workspaceRoot, outdir, bundle: true, platform: 'node', format: 'esm', target: 'node24', sourcemap: true, logLevel: 'warning' };
await build({ ...common, entryPoints: [{ in: join(projectRoot, 'src', 'main.ts'), out: 'main' }], plugins: [keepNpmPackagesExternal] });
if (childEntries.length > 0) await build({ ...common, entryPoints: childEntries, sourcemap: 'external' });

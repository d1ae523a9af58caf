// Bundles one app into dist/<app root>/main.js: the workspace libs are compiled in, npm
// packages stay external and load from node_modules at run time.
import { build } from 'esbuild';
import { join, resolve } from 'node:path';

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

await build({
  absWorkingDir: workspaceRoot,
  entryPoints: [join(projectRoot, 'src', 'main.ts')],
  outfile: join('dist', projectRoot, 'main.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  sourcemap: true,
  logLevel: 'warning',
  plugins: [keepNpmPackagesExternal],
});

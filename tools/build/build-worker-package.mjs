// The installable pool worker (docs/operations.md, "Run a pool on another host"): the
// attempt-worker with every npm package compiled in, so that a host with only Node 26 (or 24)
// runs it. Writes dist/worker-package/:
//   envengine-worker/              the package: package.json (a `bin`, no dependencies),
//     envengine-worker.mjs         the worker (`node envengine-worker.mjs --pool`),
//     asset-child.js               the sandboxed child it starts for each asset,
//     asset-child-codec.js         the row codec that child imports at its first emit or read,
//     seccomp-filter.py            what builds the sandbox's seccomp filter at its start;
//   envengine-worker-<version>.tgz the same, packed by `npm pack` (`npx ./envengine-worker-<version>.tgz --pool`).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const workspaceRoot = resolve(import.meta.dirname, '..', '..');
const outRoot = join(workspaceRoot, 'dist', 'worker-package');
const packageDir = join(outRoot, 'envengine-worker');
const { version } = JSON.parse(readFileSync(join(workspaceRoot, 'package.json'), 'utf8'));
const { engines } = JSON.parse(readFileSync(join(workspaceRoot, 'package.json'), 'utf8'));

rmSync(outRoot, { recursive: true, force: true });
mkdirSync(packageDir, { recursive: true });

const built = await build({
  absWorkingDir: workspaceRoot,
  metafile: true,
  entryPoints: [
    { in: 'apps/attempt-worker/src/main.ts', out: 'envengine-worker' },
    { in: 'apps/attempt-worker/src/sandbox/asset-child.ts', out: 'asset-child' },
    { in: 'apps/attempt-worker/src/sandbox/asset-child-codec.ts', out: 'asset-child-codec' },
  ],
  outdir: packageDir,
  outExtension: { '.js': '.js' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  minifyWhitespace: false,
  legalComments: 'linked',
  logLevel: 'warning',
  // Optional native speed-ups that their packages load in a try and do without.
  external: ['msgpackr-extract', 'cpu-features', 'snappy', 'kerberos', '@mongodb-js/zstd', 'mongodb-client-encryption', 'gcp-metadata', 'socks', 'aws4', '@aws-sdk/credential-providers'],
  // CommonJS packages compiled into an ES module still call require() for Node's own modules.
  banner: { js: "import { createRequire as __envengineCreateRequire } from 'node:module'; const require = __envengineCreateRequire(import.meta.url);" },
});

// A pool host gets the worker and what it needs, not the engine's web framework or
// database drivers: one of them compiled in means an import went the wrong way.
const forbidden = ['express', 'mongoose', 'mongodb', '@temporalio'];
const carried = forbidden.filter((name) => Object.keys(built.metafile.inputs).some((input) => input.includes(`node_modules/${name}/`)));
if (carried.length > 0) {
  console.error(`the pool worker must not carry ${carried.join(', ')}: find the import that brings it (esbuild --metafile) and cut it`);
  process.exit(1);
}

// The worker's entry is named .mjs so that `node envengine-worker.mjs` runs it as a module
// outside the package too; the child's files keep .js (the worker finds them beside itself by those names).
const entry = join(packageDir, 'envengine-worker.mjs');
renameSync(join(packageDir, 'envengine-worker.js'), entry);
writeFileSync(entry, `#!/usr/bin/env node\n${readFileSync(entry, 'utf8')}`);
chmodSync(entry, 0o755);
// The seccomp filter's builder, run at the worker's start; the worker finds it beside itself.
copyFileSync(join(workspaceRoot, 'apps/attempt-worker/src/sandbox/seccomp-filter.py'), join(packageDir, 'seccomp-filter.py'));

writeFileSync(
  join(packageDir, 'package.json'),
  `${JSON.stringify(
    {
      name: 'envengine-worker',
      version,
      description: "envengine's pool worker: takes a tenant's remote attempts and runs each asset in an OS sandbox.",
      license: 'UNLICENSED',
      type: 'module',
      bin: { 'envengine-worker': 'envengine-worker.mjs' },
      engines,
      files: ['envengine-worker.mjs', 'asset-child.js', 'asset-child-codec.js', 'seccomp-filter.py', '*.LEGAL.txt'],
    },
    null,
    2,
  )}\n`,
);

const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', outRoot], { cwd: packageDir, encoding: 'utf8' });
if (packed.status !== 0) {
  console.error(packed.stderr);
  process.exit(1);
}

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';

/**
 * Every asset starts a fresh child (issue 42: an empty run's CPU). Its own file must not
 * carry the row codec (two Parquet libraries, evaluated at each start though most assets
 * never emit or read), and must not link a source map (Node looks for it at each start,
 * and the sandbox cannot read it anyway).
 */
describe("the attempt-worker's child bundles", () => {
  let outdir: string;
  const read = (name: string) => readFileSync(join(outdir, name), 'utf8');
  /** The npm packages a bundle compiled in, from esbuild's `// node_modules/<package>/…` path comments. */
  const packagesIn = (code: string) => [...new Set([...code.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)].map((match) => match[1]))].sort();

  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'child-bundles-'));
    const built = spawnSync(process.execPath, ['tools/build/build-app.mjs', 'apps/attempt-worker', outdir], { cwd: WORKSPACE_ROOT, encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
  }, 120_000);
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it('leave the row codec out of the child, in a file of its own', () => {
    expect(packagesIn(read('asset-child.js'))).toEqual([]);
    expect(read('asset-child.js')).not.toMatch(/libs\/materialization-storage\//);
    // The encoder is the lib's own (flat-parquet-writer.ts); hyparquet only reads.
    expect(packagesIn(read('asset-child-codec.js'))).toEqual(['hyparquet']);
  });

  it('write their source maps without linking them', () => {
    for (const name of ['asset-child.js', 'asset-child-codec.js']) {
      expect(read(name)).not.toContain('sourceMappingURL');
      expect(existsSync(join(outdir, `${name}.map`))).toBe(true);
    }
    // The app's own entry keeps its link: the worker's stack traces name its sources.
    expect(read('main.js')).toContain('//# sourceMappingURL=main.js.map');
  });
});

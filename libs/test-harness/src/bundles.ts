import { packReproducible } from '@envengine/bundle-packing';

/** A tar.gz holding the given files (path → content), packed as envctl packs a project. */
export function makeBundle(files: Record<string, string>): Promise<Buffer> {
  return packReproducible(Object.entries(files).map(([path, content]) => ({ path, content })));
}

/** A small valid version-1 manifest over `assets` keys stored on `binding`, each an entry `assets/<key>.js`. */
export function manifestOf(
  assets: Array<{ key: string; deps?: string[]; columns?: Array<{ name: string; type: string; nullable?: boolean }> }>,
  binding = 'warehouse',
): Record<string, unknown> {
  return {
    version: 1,
    assets: assets.map((asset) => ({
      key: asset.key,
      binding,
      entry: `assets/${asset.key}.js`,
      deps: asset.deps ?? [],
      ...(asset.columns ? { schema: { columns: asset.columns } } : {}),
    })),
    jobs: [{ name: 'all', assets: assets.map((asset) => asset.key) }],
    schedules: [{ name: 'nightly', job: 'all', cron: '0 2 * * *', timezone: 'UTC' }],
  };
}

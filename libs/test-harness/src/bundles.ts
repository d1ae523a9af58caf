import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/** A tar.gz holding the given files (path → content), as the CLI uploads a project. */
export async function makeBundle(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
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

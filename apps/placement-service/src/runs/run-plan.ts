import type { ErrorDetail, ManifestV1 } from '@envengine/contracts';
import { didYouMean } from '@envengine/name-suggestions';

export interface RunAssetSpec {
  key: string;
  entry: string;
  /** Null for an asset that names none (the engine's own storage). */
  binding: string | null;
  deps: string[];
  schema: { columns: Array<{ name: string; type: string; nullable: boolean }> } | null;
  /** The manifest's time limit of the asset, or null. */
  timeout_seconds: number | null;
}

export type RunSelection = { job: string } | { assets: readonly string[] };

export type PlannedRun = { ok: true; job: string | null; assets: RunAssetSpec[] } | { ok: false; details: ErrorDetail[] };

/**
 * The assets a run materializes, in dependency order (an asset after every dependency
 * that the run also runs; ties keep manifest order), or the unknown names.
 */
export function planRun(manifest: ManifestV1, selection: RunSelection): PlannedRun {
  const byKey = new Map(manifest.assets.map((asset) => [asset.key, asset]));
  let wanted: readonly string[];
  let job: string | null = null;
  if ('job' in selection) {
    const found = manifest.jobs?.find((candidate) => candidate.name === selection.job);
    if (!found) {
      const hint = didYouMean(selection.job, (manifest.jobs ?? []).map((candidate) => candidate.name));
      return { ok: false, details: [{ path: 'job', message: `unknown job "${selection.job}".${hint}`.replace(/\.$/, '') }] };
    }
    wanted = found.assets;
    job = found.name;
  } else {
    const unknown = selection.assets.map((key, index) => ({ key, index })).filter(({ key }) => !byKey.has(key));
    if (unknown.length > 0) {
      return {
        ok: false,
        details: unknown.map(({ key, index }) => ({ path: `assets.${index}`, message: `unknown asset "${key}".${didYouMean(key, byKey.keys())}`.replace(/\.$/, '') })),
      };
    }
    wanted = selection.assets;
  }
  const selected = new Set(wanted);
  const ordered: RunAssetSpec[] = [];
  const visited = new Set<string>();
  // Depth-first over the manifest's order, through unselected assets too (a selected
  // asset may depend on another one only transitively); the DAG was checked at ingest.
  const place = (key: string): void => {
    if (visited.has(key)) return;
    visited.add(key);
    const asset = byKey.get(key);
    if (!asset) return;
    for (const dep of asset.deps ?? []) place(dep);
    if (!selected.has(key)) return;
    ordered.push({
      key,
      entry: asset.entry,
      binding: asset.binding ?? null,
      deps: [...(asset.deps ?? [])],
      schema: asset.schema
        ? { columns: asset.schema.columns.map((column) => ({ name: column.name, type: column.type, nullable: column.nullable ?? false })) }
        : null,
      timeout_seconds: asset.timeout_seconds ?? null,
    });
  };
  for (const asset of manifest.assets) place(asset.key);
  return { ok: true, job, assets: ordered };
}

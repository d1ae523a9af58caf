import type { AssetDiff, ColumnSpec, FilesDiff, JobDiff, ManifestAsset, ManifestV1, ScheduleDiff } from '@envengine/contracts';

// What changed from one deployment to another (docs/design.md#previews-promotion-and-diffs):
// pure, so the deployment-service answers it and its tests run it without a stack. Items
// come in a stable order (by key or name, files by path), so two reads of one diff are equal.

/** One side of a diff: its manifest (null when there is no base) and its bundle's files by SHA-256. */
export interface DiffSide {
  manifest: ManifestV1 | null;
  files: ReadonlyMap<string, string>;
}

const byName = <T>(items: readonly T[], nameOf: (item: T) => string) => new Map(items.map((item) => [nameOf(item), item]));
const sortedKeys = (...maps: ReadonlyMap<string, unknown>[]) => [...new Set(maps.flatMap((map) => [...map.keys()]))].sort();

function listChange(before: readonly string[], after: readonly string[]): { added: string[]; removed: string[] } | undefined {
  const added = after.filter((item) => !before.includes(item));
  const removed = before.filter((item) => !after.includes(item));
  return added.length === 0 && removed.length === 0 ? undefined : { added: [...new Set(added)].sort(), removed: [...new Set(removed)].sort() };
}

function fieldChange<T>(before: T | undefined, after: T | undefined): { from: T | null; to: T | null } | undefined {
  return before === after ? undefined : { from: before ?? null, to: after ?? null };
}

const column = (spec: ColumnSpec) => ({ name: spec.name, type: spec.type, nullable: spec.nullable });

function assetDiff(key: string, before: ManifestAsset | undefined, after: ManifestAsset | undefined): AssetDiff | undefined {
  const beforeColumns = byName(before?.schema?.columns ?? [], (spec) => spec.name);
  const afterColumns = byName(after?.schema?.columns ?? [], (spec) => spec.name);
  const columnsAdded = [...afterColumns.values()].filter((spec) => !beforeColumns.has(spec.name)).map(column);
  const columnsRemoved = [...beforeColumns.values()].filter((spec) => !afterColumns.has(spec.name)).map(column);
  const columnsChanged = [...afterColumns.values()].flatMap((spec) => {
    const was = beforeColumns.get(spec.name);
    if (was === undefined || (was.type === spec.type && was.nullable === spec.nullable)) return [];
    return [{ name: spec.name, from: was.type, to: spec.type, ...(was.nullable !== spec.nullable ? { nullable: { from: was.nullable, to: spec.nullable } } : {}) }];
  });
  const change = before === undefined ? 'added' : after === undefined ? 'removed' : 'changed';
  const fields = {
    entry: fieldChange(before?.entry, after?.entry),
    deps: listChange(before?.deps ?? [], after?.deps ?? []),
    binding: fieldChange(before?.binding, after?.binding),
    timeout_seconds: fieldChange(before?.timeout_seconds, after?.timeout_seconds),
  };
  const present = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  const columnsDiffer = columnsAdded.length + columnsRemoved.length + columnsChanged.length > 0;
  if (change === 'changed' && !columnsDiffer && Object.keys(present).length === 0) return undefined;
  return { key, change, columns_added: columnsAdded, columns_removed: columnsRemoved, columns_changed: columnsChanged, ...present };
}

function jobDiffs(before: ManifestV1 | null, after: ManifestV1): JobDiff[] {
  const was = byName(before?.jobs ?? [], (job) => job.name);
  const now = byName(after.jobs ?? [], (job) => job.name);
  return sortedKeys(was, now).flatMap((name): JobDiff[] => {
    const [old, next] = [was.get(name), now.get(name)];
    if (old === undefined) return [{ name, change: 'added', assets: listChange([], next!.assets) }];
    if (next === undefined) return [{ name, change: 'removed', assets: listChange(old.assets, []) }];
    const assets = listChange(old.assets, next.assets);
    return assets ? [{ name, change: 'changed', assets }] : [];
  });
}

function scheduleDiffs(before: ManifestV1 | null, after: ManifestV1): ScheduleDiff[] {
  const was = byName(before?.schedules ?? [], (schedule) => schedule.name);
  const now = byName(after.schedules ?? [], (schedule) => schedule.name);
  return sortedKeys(was, now).flatMap((name): ScheduleDiff[] => {
    const [old, next] = [was.get(name), now.get(name)];
    const fields = { job: fieldChange(old?.job, next?.job), cron: fieldChange(old?.cron, next?.cron), timezone: fieldChange(old?.timezone, next?.timezone) };
    const present = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
    const change = old === undefined ? 'added' : next === undefined ? 'removed' : 'changed';
    if (change === 'changed' && Object.keys(present).length === 0) return [];
    return [{ name, change, ...present }];
  });
}

function filesDiff(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): FilesDiff {
  const paths = sortedKeys(before, after);
  return {
    added: paths.filter((path) => !before.has(path)),
    removed: paths.filter((path) => !after.has(path)),
    changed: paths.filter((path) => before.has(path) && after.has(path) && before.get(path) !== after.get(path)),
  };
}

/** The changes from `base` to `head`: assets with their columns and fields, jobs, schedules, and the bundle's files. */
export function manifestDiff(base: DiffSide, head: DiffSide & { manifest: ManifestV1 }): { assets: AssetDiff[]; jobs: JobDiff[]; schedules: ScheduleDiff[]; files: FilesDiff } {
  // A duplicated key (only in a failed deployment) counts once, by its first declaration.
  const firstOf = (manifest: ManifestV1 | null) => {
    const assets = new Map<string, ManifestAsset>();
    for (const asset of manifest?.assets ?? []) if (!assets.has(asset.key)) assets.set(asset.key, asset);
    return assets;
  };
  const was = firstOf(base.manifest);
  const now = firstOf(head.manifest);
  return {
    assets: sortedKeys(was, now).flatMap((key) => assetDiff(key, was.get(key), now.get(key)) ?? []),
    jobs: jobDiffs(base.manifest, head.manifest),
    schedules: scheduleDiffs(base.manifest, head.manifest),
    files: filesDiff(base.files, head.files),
  };
}

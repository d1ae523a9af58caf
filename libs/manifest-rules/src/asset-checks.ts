import { suggestionFor } from './suggestions.ts';
import { bundleHasEntry } from './bundle-entries.ts';
import { findDependencyCycles, type DependencyCycle, type DependencyEdge } from './dependency-cycles.ts';
import type { ManifestV1 } from '@envengine/contracts';
import { quoted } from '@envengine/contracts';
import { manifestPath, type ValidationContext, type ValidationError, type ValidationWarning } from './validation-issue.ts';

// Checks of a parsed manifest's assets against each other and against the environment.

/** Where each asset key is first declared; later declarations are `duplicate_asset`. */
export function firstIndexByKey(manifest: ManifestV1): ReadonlyMap<string, number> {
  const index = new Map<string, number>();
  manifest.assets.forEach((asset, position) => {
    if (!index.has(asset.key)) index.set(asset.key, position);
  });
  return index;
}

export function duplicateAssetErrors(manifest: ManifestV1, assetIndex: ReadonlyMap<string, number>): ValidationError[] {
  const errors: ValidationError[] = [];
  manifest.assets.forEach((asset, index) => {
    const first = assetIndex.get(asset.key)!;
    if (first === index) return;
    errors.push({
      code: 'duplicate_asset',
      path: manifestPath('assets', index, 'key'),
      message: `Asset key ${quoted(asset.key)} is already declared by ${manifestPath('assets', first)}.`,
    });
  });
  return errors;
}

export function dependencyErrors(manifest: ManifestV1, assetIndex: ReadonlyMap<string, number>): ValidationError[] {
  const unknown: ValidationError[] = [];
  const edges: DependencyEdge[][] = manifest.assets.map((asset, index) => {
    const assetEdges: DependencyEdge[] = [];
    const targets = new Set<number>();
    asset.deps.forEach((dep, depIndex) => {
      const to = assetIndex.get(dep);
      if (to === undefined) {
        unknown.push({
          code: 'unknown_dependency',
          path: manifestPath('assets', index, 'deps', depIndex),
          message: `Asset ${quoted(asset.key)} depends on ${quoted(dep)}, which is not an asset of this manifest.${suggestionFor(dep, assetIndex.keys())}`,
        });
      } else if (!targets.has(to)) {
        // A dependency listed twice is one edge, so its cycle is reported once.
        targets.add(to);
        assetEdges.push({ to, depIndex });
      }
    });
    return assetEdges;
  });
  const cycles = findDependencyCycles(edges).map((cycle) => cycleError(manifest, cycle));
  return [...unknown, ...cycles];
}

function cycleError(manifest: ManifestV1, cycle: DependencyCycle): ValidationError {
  const keyOf = (node: number) => manifest.assets[node]!.key;
  const named = cycle.nodes.map(keyOf);
  if (cycle.omitted > 0) named.splice(cycle.omittedAfter, 0, `… (${cycle.omitted} more)`);
  named.push(keyOf(cycle.nodes[0]!));
  return {
    code: 'dependency_cycle',
    path: manifestPath('assets', cycle.from, 'deps', cycle.depIndex),
    message: `Asset dependencies form a cycle: ${named.join(' -> ')}.`,
  };
}

export function bindingErrors(manifest: ManifestV1, context: ValidationContext): ValidationError[] {
  const errors: ValidationError[] = [];
  manifest.assets.forEach((asset, index) => {
    // An asset without a binding stores with the engine's own storage: nothing to look up.
    if (asset.binding === undefined || context.bindings.has(asset.binding)) return;
    const fix = `envctl bindings set ${asset.binding} --env ${context.environmentName ?? 'ENV'}`;
    errors.push({
      code: 'unknown_binding',
      path: manifestPath('assets', index, 'binding'),
      message: `Asset ${quoted(asset.key)} is stored on binding ${quoted(asset.binding)}, which this environment does not have.${suggestionFor(asset.binding, context.bindings.keys())} Make it with \`${fix}\`.`,
    });
  });
  return errors;
}

export function entryErrors(manifest: ManifestV1, bundleEntries: ReadonlySet<string> | null): ValidationError[] {
  // Without the bundle there is nothing to look in; `bundle_not_found` says so.
  if (bundleEntries === null) return [];
  const errors: ValidationError[] = [];
  manifest.assets.forEach((asset, index) => {
    if (bundleHasEntry(bundleEntries, asset.entry)) return;
    errors.push({
      code: 'entry_not_in_bundle',
      path: manifestPath('assets', index, 'entry'),
      message: `Asset ${quoted(asset.key)} has entry ${quoted(asset.entry)}, which is not a file in the bundle.${suggestionFor(asset.entry, bundleEntries)}`,
    });
  });
  return errors;
}

export function assetRemovedWarnings(
  manifest: ManifestV1,
  active: ManifestV1 | null,
  assetIndex: ReadonlyMap<string, number>,
): ValidationWarning[] {
  if (active === null) return [];
  const warnings: ValidationWarning[] = [];
  const reported = new Set<string>();
  for (const asset of active.assets) {
    if (assetIndex.has(asset.key) || reported.has(asset.key)) continue;
    reported.add(asset.key);
    warnings.push({
      code: 'asset_removed',
      path: manifestPath('assets'),
      message: `Asset ${quoted(asset.key)} of the active deployment is not in this manifest, so this deployment will not materialize it.`,
    });
  }
  return warnings;
}

export function readOnlyBindingWarnings(manifest: ManifestV1, context: ValidationContext): ValidationWarning[] {
  const warnings: ValidationWarning[] = [];
  manifest.assets.forEach((asset, index) => {
    if (asset.binding === undefined || context.bindings.get(asset.binding)?.mode !== 'read_only') return;
    warnings.push({
      code: 'read_only_binding',
      path: manifestPath('assets', index, 'binding'),
      message: `Asset ${quoted(asset.key)} is stored on binding ${quoted(asset.binding)}, which is read_only, so its emits will fail.`,
    });
  });
  return warnings;
}

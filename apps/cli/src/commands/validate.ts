import { resolve } from 'node:path';
import { PublicApi, type AssetListing, type ColumnType, type ManifestV1 } from '@envengine/contracts';
import { validateManifest, type BindingMode, type ValidationContext } from '@envengine/manifest-rules';
import { listOption, stringOption, type CommandSpec } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { ExitCode } from '../exit-codes.ts';
import { MANIFEST_OPTION, readAndPackProject } from '../project/manifest-file.ts';
import { assetOfPath, inFlagTerms, REPORT_HEADERS, reportCells, type ReportRow } from '../project/validation-report.ts';

/**
 * The active deployment's assets, as a manifest the contract checks can compare against:
 * only keys and declared schemas matter to them (libs/manifest-rules/src/contract-changes.ts).
 */
function activeManifestOf(assets: readonly AssetListing[]): ManifestV1 | null {
  if (assets.length === 0) return null;
  return {
    version: 1,
    assets: assets.map((asset) => ({
      key: asset.key,
      ...(asset.binding === null ? {} : { binding: asset.binding }),
      entry: '',
      deps: [],
      // The active deployment's declared columns: a column type of its manifest, answered as text.
      ...(asset.schema ? { schema: { columns: asset.schema.columns.map((column) => ({ ...column, type: column.type as ColumnType })) } } : {}),
    })),
  };
}

/** What the checks know of the environment: with `--env`, its bindings, strictness and active assets; without, nothing to hold against. */
async function contextOf(ctx: CommandContext, environment: string | undefined, manifest: Record<string, unknown>, files: readonly string[], allowContractChanges: string[]): Promise<ValidationContext> {
  const bundleEntries = new Set(files);
  if (environment === undefined) {
    // Without an environment every binding the manifest names counts as there: only the project is checked.
    const named = Array.isArray(manifest.assets) ? manifest.assets.flatMap((asset) => (typeof (asset as { binding?: unknown }).binding === 'string' ? [(asset as { binding: string }).binding] : [])) : [];
    return { bindings: new Map(named.map((name) => [name, { mode: 'live' as BindingMode }])), bundleEntries, activeManifest: null, strict: false, allowContractChanges };
  }
  const api = await ctx.api();
  const [{ data: found }, { data: bindings }, { data: assets }] = await Promise.all([
    api.request(PublicApi.getEnvironment, { params: { name: environment } }),
    api.request(PublicApi.listBindings, { params: { name: environment } }),
    api.request(PublicApi.listAssets, { params: { name: environment } }),
  ]);
  return {
    bindings: new Map(bindings.map((binding) => [binding.name, { mode: binding.mode }])),
    bundleEntries,
    activeManifest: activeManifestOf(assets),
    strict: found.strict,
    allowContractChanges,
    environmentName: environment,
  };
}

export const validateCommand: CommandSpec = {
  path: ['validate'],
  summary: "run the ingest's own checks on a project folder, offline (with --env, also against that environment)",
  args: '[DIR]',
  positionals: { min: 0, max: 1 },
  options: {
    ...MANIFEST_OPTION,
    env: { type: 'string', value: 'NAME', description: "also check against this environment: its bindings, and a strict one's contract changes against its active deployment" },
    'allow-contract-change': { type: 'string', multiple: true, value: 'KEY', description: 'accept a schema change of asset KEY, as deploy would' },
  },
  async run(ctx, { values, positionals }) {
    const dir = resolve(positionals[0] ?? '.');
    const { manifest, packed } = await readAndPackProject(dir, stringOption(values, 'manifest'), (line) => ctx.out.warn(line));
    const allowContractChanges = listOption(values, 'allow-contract-change');
    const context = await contextOf(ctx, stringOption(values, 'env'), manifest, packed.files, allowContractChanges);
    // The same checks as the engine's ingest, from the same lib: every problem in one pass.
    const { errors, warnings } = validateManifest(manifest, context);
    const row = (level: ReportRow['level']) => (item: { code: string; path: string; message: string }): ReportRow => ({
      level,
      asset: assetOfPath(item.path, manifest, allowContractChanges),
      code: item.code,
      message: inFlagTerms(item.message),
      path: item.path,
    });
    const rows = [...errors.map(row('error')), ...warnings.map(row('warning'))];
    const result = { valid: errors.length === 0, errors, warnings };
    ctx.out.data(result, () =>
      [
        errors.length === 0
          ? `${dir} is valid${warnings.length > 0 ? `, with ${warnings.length} warning${warnings.length === 1 ? '' : 's'}` : ''}.`
          : `${dir} has ${errors.length} error${errors.length === 1 ? '' : 's'} and ${warnings.length} warning${warnings.length === 1 ? '' : 's'}:`,
        rows.length > 0 ? ctx.out.table(REPORT_HEADERS, reportCells(rows)) : '',
      ].filter(Boolean).join('\n'),
    );
    return errors.length === 0 ? ExitCode.ok : ExitCode.failed;
  },
};

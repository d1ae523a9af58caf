import type { Deployment, ValidationItem } from '@envengine/contracts';
import type { Cell } from '../output.ts';

/**
 * The asset an item is about, from its path into the request body:
 * `manifest.assets.2.schema` is the third asset's key, `allow_contract_changes.0` the key
 * listed there. Null when the item is not about one asset.
 */
export function assetOfPath(path: string, manifest: Record<string, unknown>, allowContractChanges: readonly string[]): string | null {
  const asset = /^manifest\.assets\.(\d+)(\.|$)/.exec(path);
  if (asset) {
    const entry = Array.isArray(manifest.assets) ? (manifest.assets[Number(asset[1])] as { key?: unknown } | undefined) : undefined;
    return typeof entry?.key === 'string' ? entry.key : null;
  }
  const listed = /^allow_contract_changes\.(\d+)$/.exec(path);
  if (listed) return allowContractChanges[Number(listed[1])] ?? null;
  return null;
}

/**
 * The engine's messages name the API's fields; on the command line the user types flags.
 * (JSON output keeps the deployment row as the API answered it.)
 */
const FIELD_FLAGS: ReadonlyArray<readonly [RegExp, string]> = [[/\ballow_contract_changes\b/g, '--allow-contract-change']];

export function inFlagTerms(message: string): string {
  return FIELD_FLAGS.reduce((text, [field, flag]) => text.replace(field, flag), message);
}

export interface ReportRow {
  level: 'error' | 'warning';
  asset: string | null;
  code: string;
  message: string;
  path: string;
}

export function validationRows(deployment: Deployment, manifest: Record<string, unknown>): ReportRow[] {
  const row = (level: ReportRow['level']) => (item: ValidationItem): ReportRow => ({
    level,
    asset: assetOfPath(item.path, manifest, deployment.allow_contract_changes),
    code: item.code,
    message: inFlagTerms(item.message),
    path: item.path,
  });
  return [...deployment.validation.errors.map(row('error')), ...deployment.validation.warnings.map(row('warning'))];
}

export const REPORT_HEADERS = ['LEVEL', 'ASSET', 'CODE', 'MESSAGE'] as const;

export function reportCells(rows: readonly ReportRow[]): Cell[][] {
  return rows.map((row) => [{ text: row.level, color: row.level === 'error' ? 'red' : 'yellow' }, row.asset ?? '-', row.code, row.message]);
}

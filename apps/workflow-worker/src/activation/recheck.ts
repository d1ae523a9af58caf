import { ManifestV1, type ColumnSpecInput, type Recheck } from '@envengine/contracts';
import { storedColumnsMismatch } from '@envengine/manifest-rules';
import type { MaterializationRepository } from '@envengine/deployment-data';
import type { EventCause } from '@envengine/event-log';

/**
 * The activation re-check: every asset of the target that declares a schema is compared
 * with the stored columns of its current latest materialization; a mismatch quarantines
 * that materialization in place, with its event (naming `cause`). Already quarantined ones
 * stay so, and record no second event.
 */
export async function recheckStoredColumns(
  materializations: MaterializationRepository,
  target: { tenantId: string; environment: { id: string; name: string }; deploymentId: string; manifest: unknown; cause: EventCause },
): Promise<Recheck> {
  const parsed = ManifestV1.safeParse(target.manifest);
  if (!parsed.success) return { checked: 0, quarantined: [] };
  const declared = parsed.data.assets.filter((asset) => asset.schema !== undefined);
  const latest = await materializations.latest(target.tenantId, target.environment.id, declared.map((asset) => asset.key));
  let checked = 0;
  const quarantined: string[] = [];
  for (const asset of declared) {
    const materialization = latest.get(asset.key);
    if (!materialization) continue;
    checked += 1;
    // Stored types are whatever the run wrote; an unknown one simply differs from every declared type.
    const mismatch = storedColumnsMismatch(asset.schema!.columns, materialization.columns as ColumnSpecInput[]);
    if (mismatch === null) continue;
    quarantined.push(asset.key);
    if (materialization.status !== 'quarantined') {
      await materializations.quarantine(target.tenantId, materialization.id, mismatch, target.deploymentId, { environment: target.environment, cause: target.cause });
    }
  }
  return { checked, quarantined };
}

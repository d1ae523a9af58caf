import { EnvironmentAccess, ManifestV1, type DeploymentDiff } from '@envengine/contracts';
import type { BundleRepository, DeploymentDocument, DeploymentRepository } from '@envengine/deployment-data';
import { manifestDiff, type DiffSide } from '@envengine/manifest-rules';
import type { PlacementClient } from '@envengine/service-clients';
import { ApiError, notFound } from '@envengine/service-kit';

/**
 * `GET /deployments/:id/diff` (docs/design.md#previews-promotion-and-diffs): two deployments
 * of the caller compared by their stored manifests and their bundles' file hashes. The
 * comparison itself is pure (`manifestDiff` in libs/manifest-rules).
 */
export class DeploymentDiffs {
  constructor(
    private readonly deployments: DeploymentRepository,
    private readonly bundles: BundleRepository,
    private readonly placement: PlacementClient,
  ) {}

  async diff(tenantId: string, headId: string, baseId: string | undefined, requestId: string, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<DeploymentDiff> {
    const head = await this.visible(tenantId, headId, environments);
    const base = baseId === undefined ? await this.defaultBase(tenantId, head, requestId) : await this.visible(tenantId, baseId, environments);
    const [headSide, baseSide] = await Promise.all([this.side(tenantId, head), base ? this.side(tenantId, base) : Promise.resolve<DiffSide>({ manifest: null, files: new Map() })]);
    return { base_id: base?._id ?? null, head_id: head._id, ...manifestDiff(baseSide, { ...headSide, manifest: headSide.manifest! }) };
  }

  /** The caller's deployment, or 404 (another tenant's, one outside the token's environments, or none). */
  private async visible(tenantId: string, id: string, environments: EnvironmentAccess): Promise<DeploymentDocument> {
    const row = await this.deployments.find(tenantId, id);
    if (!row || !environments.allows(row.environment_name)) throw notFound(`Deployment ${id}`);
    return row;
  }

  /**
   * The deployment active in the head's environment before the head's last activation,
   * else (never activated) the environment's active one; none when there is neither.
   */
  private async defaultBase(tenantId: string, head: DeploymentDocument, requestId: string): Promise<DeploymentDocument | undefined> {
    let baseId: string | null | undefined;
    if (head.activated_at) {
      baseId = head.previous_active_id !== undefined ? head.previous_active_id : await this.deployments.activatedBefore(tenantId, head.environment_id, head.activated_at, head._id);
    } else {
      const environment = await this.placement.findEnvironment(tenantId, head.environment_name, requestId);
      baseId = environment?.id === head.environment_id ? environment.active_deployment_id : null;
    }
    if (!baseId || baseId === head._id) return undefined;
    return (await this.deployments.find(tenantId, baseId)) ?? undefined;
  }

  private async side(tenantId: string, row: DeploymentDocument): Promise<DiffSide> {
    const [stored, files] = await Promise.all([this.deployments.manifest(tenantId, row._id), this.bundles.fileHashes(tenantId, row.bundle_ref)]);
    const manifest = ManifestV1.safeParse(stored);
    if (!manifest.success) {
      throw new ApiError('deployment_not_ready', `Deployment ${row._id} is ${row.status} and its manifest is not a valid version-1 manifest; there is nothing to compare.`);
    }
    return { manifest: manifest.data, files: files ?? new Map() };
  }
}

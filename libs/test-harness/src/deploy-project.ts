import type { ApiClient, ApiResponse } from './api-client.ts';
import { makeBundle } from './bundles.ts';

export interface ProjectToDeploy {
  /** The environment, created here. */
  environment: string;
  /** Where its materializations go, e.g. `file:///tmp/lake`. */
  storagePrefix: string;
  executor: 'local' | 'remote';
  /** More of the environment's create body (`kind`, `ttl_hours`, `max_concurrent_runs`...). */
  settings?: Record<string, unknown>;
  /** Secret name → value, written before the bindings (whose `secret_refs` may name them). */
  secrets?: Record<string, string>;
  /** Binding name → the body of its PUT (e.g. `{}` or `{ config: {...} }`), created before the deployment. */
  bindings: Record<string, Record<string, unknown>>;
  /** The bundle's files, path → content. */
  files: Record<string, string>;
  manifest: Record<string, unknown>;
}

/**
 * A new environment with its bindings, and the project's bundle uploaded and deployed
 * (active once this returns). Throws on any refusal; returns the bundle ref.
 */
export async function deployProject(api: ApiClient, project: ProjectToDeploy): Promise<string> {
  const { environment } = project;
  expectStatus(await api.post('/environments', { name: environment, storage_prefix: project.storagePrefix, executor: project.executor, ...project.settings }), 201, 'creating the environment');
  for (const [name, value] of Object.entries(project.secrets ?? {})) {
    expectStatus(await api.put(`/environments/${environment}/secrets/${name}`, { value }), 201, `creating the secret ${name}`);
  }
  for (const [name, body] of Object.entries(project.bindings)) {
    expectStatus(await api.put(`/environments/${environment}/bindings/${name}`, body), 201, `creating the binding ${name}`);
  }
  const uploaded = await api.request('POST', '/bundles', { raw: await makeBundle(project.files), headers: { 'content-type': 'application/gzip' } });
  // 200 when the tenant already has these bytes.
  const bundleRef = (expectStatus(uploaded, [200, 201], 'uploading the bundle').body as { data: { bundle_ref: string } }).data.bundle_ref;
  expectStatus(await api.post(`/environments/${environment}/deployments`, { manifest: project.manifest, bundle_ref: bundleRef }), 201, 'deploying the manifest');
  return bundleRef;
}

function expectStatus(response: ApiResponse, status: number | number[], what: string): ApiResponse {
  const expected = [status].flat();
  if (!expected.includes(response.status)) throw new Error(`${what} answered ${response.status}, not ${expected.join(' or ')}: ${response.text.slice(0, 500)}`);
  return response;
}

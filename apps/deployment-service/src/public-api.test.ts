import { PublicApi } from '@envengine/contracts';
import { routesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { deploymentPublicApi, type DeploymentPublicApiDeps } from './public-api.ts';

describe('the deployment-service public API', () => {
  it('mounts exactly the PublicApi endpoints the gateway forwards to it', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { api, streamingApi } = deploymentPublicApi({} as DeploymentPublicApiDeps);
    const mounted = [...routesOf(api), ...routesOf(streamingApi)].map((route) => `${route.method} ${route.path}`);
    const declared = Object.values(PublicApi)
      .filter((endpoint) => endpoint.service === 'deployment')
      .map((endpoint) => `${endpoint.method} ${endpoint.path}`);
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted.sort()).toEqual(declared.sort());
  });
});

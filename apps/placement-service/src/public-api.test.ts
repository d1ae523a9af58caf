import { PublicApi } from '@envengine/contracts';
import { routesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { placementPublicApi, type PlacementPublicApiDeps } from './public-api.ts';

describe('the placement-service public API', () => {
  it('mounts exactly the PublicApi endpoints the gateway forwards to it', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const mounted = routesOf(placementPublicApi({} as PlacementPublicApiDeps)).map((route) => `${route.method} ${route.path}`);
    const declared = Object.values(PublicApi)
      .filter((endpoint) => endpoint.service === 'placement')
      .map((endpoint) => `${endpoint.method} ${endpoint.path}`);
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted.sort()).toEqual(declared.sort());
  });
});

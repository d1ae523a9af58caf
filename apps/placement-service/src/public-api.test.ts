import { publicRoutesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { placementPublicApi, type PlacementPublicApiDeps } from './public-api.ts';

describe('the placement-service public API', () => {
  it('mounts exactly the PublicApi endpoints the gateway forwards to it', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { mounted, declared } = publicRoutesOf('placement', placementPublicApi({} as PlacementPublicApiDeps));
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted).toEqual(declared);
  });
});

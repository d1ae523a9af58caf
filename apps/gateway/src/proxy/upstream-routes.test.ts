import { PublicApi } from '@envengine/contracts';
import { describe, expect, it } from 'vitest';
import { upstreamFor } from './upstream-routes.ts';

describe('upstreamFor', () => {
  // Every public route, from the table the services mount their handlers from.
  it.each(Object.entries(PublicApi).map(([operationId, endpoint]) => [operationId, endpoint] as const))(
    '%s reaches the service that mounts it, with the token it takes',
    (_operationId, endpoint) => {
      const path = endpoint.path.replace(/:([a-z_]+)/g, (_match, name: string) => `${name}_1`);
      expect(upstreamFor(path)).toBe(endpoint.service);
      expect(path.startsWith('/worker/')).toBe(endpoint.auth === 'pool_token');
    },
  );

  it.each(['/', '/environmentsx', '/tokens', '/environments-prod', '/workers', '/poolx'])('%s has no owner', (path) => {
    expect(upstreamFor(path)).toBeUndefined();
  });
});

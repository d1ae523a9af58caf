import { describe, expect, it } from 'vitest';
import { PublicApi } from '@envengine/contracts';
import { methodsAllowedOn, operationOf, publicRouteOf } from './public-routes.ts';

const route = (method: string, originalUrl: string) => publicRouteOf({ method, originalUrl });

describe('publicRouteOf', () => {
  it("names a request by its operation's template, never by the values in its path", () => {
    expect(route('GET', '/api/v1/environments')).toBe('/api/v1/environments');
    expect(route('GET', '/api/v1/environments/prod?x=1')).toBe('/api/v1/environments/:param');
    expect(route('POST', '/api/v1/environments/prod/runs')).toBe('/api/v1/environments/:param/runs');
    expect(route('POST', '/api/v1/runs/run_01m8/cancel')).toBe('/api/v1/runs/:param/cancel');
    expect(route('HEAD', '/api/v1/environments')).toBe('/api/v1/environments');
  });

  it('names no operation for a made-up path or method, or a path with a segment more', () => {
    for (const [method, path] of [
      ['GET', '/api/v1/nothing-here'],
      ['GET', '/no/such/path'],
      ['PATCH', '/api/v1/runs/run_1'],
      ['GET', '/api/v1/environments/prod/extra/segment'],
      ['GET', '/api/v1/environments/prod/runs/runs/runs'],
    ]) {
      expect([method, path, route(method!, path!)]).toEqual([method, path, undefined]);
    }
  });
});

describe('methodsAllowedOn', () => {
  it("lists the methods the public API declares for a path, HEAD with GET, and none for a path it lacks", () => {
    expect(methodsAllowedOn('/environments')).toEqual(['GET', 'HEAD', 'POST']);
    expect(methodsAllowedOn('/environments/prod')).toEqual(['DELETE', 'GET', 'HEAD', 'PATCH']);
    expect(methodsAllowedOn('/bundles')).toEqual(['POST']);
    expect(methodsAllowedOn('/bundles/sha256:ab')).toEqual(['HEAD']);
    expect(methodsAllowedOn('/worker/bundles/sha256:ab')).toEqual(['GET', 'HEAD']);
    expect(methodsAllowedOn('/runs/run_1/cancel')).toEqual(['POST']);
    expect(methodsAllowedOn('/nothing-here')).toEqual([]);
    expect(methodsAllowedOn('/environments/prod/extra/segment')).toEqual([]);
  });
});

describe('operationOf', () => {
  // Every public route, from the table the services mount their handlers from.
  it.each(Object.entries(PublicApi).map(([operationId, endpoint]) => [operationId, endpoint] as const))(
    '%s is matched with its params, and only a worker route takes a pool token',
    (operationId, endpoint) => {
      const path = endpoint.path.replace(/:([a-z_]+)/g, (_match, name: string) => `${name}_1`);
      const matched = operationOf(endpoint.method.toUpperCase(), path);
      expect(matched?.operationId).toBe(operationId);
      for (const [name, value] of Object.entries(matched!.params)) expect(value).toBe(`${name}_1`);
      expect(path.startsWith('/worker/')).toBe(endpoint.auth === 'pool_token');
      expect(endpoint.scope === null).toBe(endpoint.auth === 'pool_token');
    },
  );

  it('decodes params, takes HEAD as GET, and matches nothing else', () => {
    expect(operationOf('GET', '/environments/pr%2D7')).toMatchObject({ operationId: 'getEnvironment', params: { name: 'pr-7' } });
    expect(operationOf('HEAD', '/runs/run_1')?.operationId).toBe('getRun');
    expect(operationOf('HEAD', '/bundles/sha256:ab')?.operationId).toBe('bundleExists');
    expect(operationOf('GET', '/environments/%E0%A4%A')?.params).toEqual({ name: '%E0%A4%A' });
    for (const path of ['/', '/environmentsx', '/environments-prod', '/workers', '/poolx', '/tokens/tok_1/x']) expect(operationOf('GET', path)).toBeUndefined();
  });
});

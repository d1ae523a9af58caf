import { describe, expect, it } from 'vitest';
import { methodsAllowedOn, publicRouteOf } from './public-routes.ts';

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

import { describe, expect, it } from 'vitest';
import { routeTemplateOf } from './route-template.ts';

describe('routeTemplateOf', () => {
  it.each([
    ['/api/v1/environments', '/api/v1/environments'],
    ['/api/v1/environments/prod/runs?status=failed', '/api/v1/environments/:param/runs'],
    ['/api/v1/environments/:name/bindings/:connection', '/api/v1/environments/:param/bindings/:param'],
    ['/api/v1/runs/run_01m89y7t1ac4vx7cq0pfc2gjbf/cancel', '/api/v1/runs/:param/cancel'],
    ['/api/v1/bundles/sha256:abc', '/api/v1/bundles/:param'],
    ['/api/v1/environments/runs/runs', '/api/v1/environments/runs/runs'],
    ['/metrics', '/metrics'],
    ['/', '/'],
  ])('%s → %s', (path, template) => {
    expect(routeTemplateOf(path)).toBe(template);
  });

  it('never carries a value a user chose, however long the path', () => {
    expect(routeTemplateOf(`/${'a/'.repeat(40)}`)).toBe('too_long');
    expect(routeTemplateOf('/api/v1/environments/secret-tenant-name')).not.toContain('secret');
  });
});

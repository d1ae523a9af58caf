import { describe, expect, it } from 'vitest';
import { previewExpiry } from './preview-expiry.ts';

const at = (iso: string) => new Date(iso);

describe('previewExpiry', () => {
  it('is null without a TTL, and each TTL alone from its own start', () => {
    expect(previewExpiry({ ttlHours: null, ttlFrom: at('2026-01-01T00:00:00Z'), idleTtlHours: null, lastActiveAt: at('2026-01-01T00:00:00Z') })).toBeNull();
    expect(previewExpiry({ ttlHours: 48, ttlFrom: at('2026-01-01T00:00:00Z'), idleTtlHours: null, lastActiveAt: at('2026-01-01T12:00:00Z') })).toEqual(at('2026-01-03T00:00:00Z'));
    expect(previewExpiry({ ttlHours: null, ttlFrom: at('2026-01-01T00:00:00Z'), idleTtlHours: 2, lastActiveAt: at('2026-01-01T12:00:00Z') })).toEqual(at('2026-01-01T14:00:00Z'));
  });

  it('is the earlier of the two: a run moves the idle lapse, never past the TTL', () => {
    const ttl = { ttlHours: 24, ttlFrom: at('2026-01-01T00:00:00Z'), idleTtlHours: 6 };
    expect(previewExpiry({ ...ttl, lastActiveAt: at('2026-01-01T01:00:00Z') })).toEqual(at('2026-01-01T07:00:00Z'));
    expect(previewExpiry({ ...ttl, lastActiveAt: at('2026-01-01T20:00:00Z') })).toEqual(at('2026-01-02T00:00:00Z'));
  });

  it('takes fractions of hours', () => {
    expect(previewExpiry({ ttlHours: null, ttlFrom: at('2026-01-01T00:00:00Z'), idleTtlHours: 0.5, lastActiveAt: at('2026-01-01T00:00:00Z') })).toEqual(at('2026-01-01T00:30:00Z'));
  });
});

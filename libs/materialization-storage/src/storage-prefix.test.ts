import { describe, expect, it } from 'vitest';
import { storagePrefixesOverlap, storagePrefixKey, writtenLocationPrefixKey } from './storage-prefix.ts';

describe('storage prefixes compared', () => {
  it('keys a prefix whatever its spelling', () => {
    expect(storagePrefixKey('s3://lake/prod')).toBe('s3://lake/prod/');
    expect(storagePrefixKey('S3://lake/prod//')).toBe('s3://lake/prod/');
    expect(storagePrefixKey('file:///lake/prod')).toBe('file:///lake/prod/');
    expect(storagePrefixKey('file://localhost/lake/pr%6Fd/')).toBe('file:///lake/prod/');
  });

  it('finds equal, enclosing and enclosed prefixes, and not siblings that share a name prefix', () => {
    const overlapping = [
      ['s3://lake/data', 's3://lake/data'],
      ['s3://lake/data', 's3://lake/data/'],
      ['s3://lake/data', 's3://lake/data/pr-6'],
      ['s3://lake/data/pr-6', 's3://lake/data'],
      ['file:///lake/t/data', 'file://localhost/lake/t/data/inner'],
      ['file:///lake/t', 'file:///lake/t/d%61ta'],
    ];
    for (const [a, b] of overlapping) expect([a, b, storagePrefixesOverlap(a!, b!)]).toEqual([a, b, true]);
    const apart = [
      ['s3://lake/data', 's3://lake/data2'],
      ['s3://lake/data', 's3://other/data'],
      ['s3://lake/data', 'file:///lake/data'],
      ['file:///lake/t/prod', 'file:///lake/t/prod2'],
    ];
    for (const [a, b] of apart) expect([a, b, storagePrefixesOverlap(a!, b!)]).toEqual([a, b, false]);
  });

  it("names the prefix a written file belongs to: the one two segments up", () => {
    expect(writtenLocationPrefixKey('s3://lake/data/orders/mat_01.parquet')).toBe('s3://lake/data/');
    expect(writtenLocationPrefixKey('file:///lake/t/data/orders/mat_01.parquet')).toBe('file:///lake/t/data/');
    // A nested environment's file is not its ancestor's.
    expect(writtenLocationPrefixKey('s3://lake/data/inner/orders/mat_01.parquet')).not.toBe(storagePrefixKey('s3://lake/data'));
  });
});

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileStorageDriver } from './file-storage-driver.ts';
import { StorageLocationError, StoredFileNotFoundError, UnsupportedStorageError } from './storage-driver.ts';
import { storageDriverFor } from './storage-drivers.ts';
import { materializationLocation } from './storage-locations.ts';
import { S3StorageDriver, s3StoragePrefixProblem } from './s3-storage-driver.ts';
import { storagePrefixProblem } from './storage-prefix.ts';

let root: string;
let prefix: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'materialization-storage-'));
  prefix = pathToFileURL(root).href;
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const bytesOf = (text: string) => new TextEncoder().encode(text);

describe('materializationLocation', () => {
  it.each([
    ['file:///data/prod', 'file:///data/prod/orders/mat_01.parquet'],
    ['file:///data/prod/', 'file:///data/prod/orders/mat_01.parquet'],
    ['file:///data/prod//', 'file:///data/prod/orders/mat_01.parquet'],
    ['file:///', 'file:///orders/mat_01.parquet'],
    ['s3://bucket/prefix/', 's3://bucket/prefix/orders/mat_01.parquet'],
  ])('puts %s + orders + mat_01 at %s', (storagePrefix, expected) => {
    expect(materializationLocation(storagePrefix, 'orders', 'mat_01')).toBe(expected);
  });

  it.each([
    ['..', 'mat_01'],
    ['a/b', 'mat_01'],
    ['orders..old', 'mat_01'],
    ['.hidden', 'mat_01'],
    ['', 'mat_01'],
    ['orders', '../mat_01'],
    ['orders', 'mat%2F01'],
  ])('refuses asset key %j with id %j, which would not stay one path segment each', (assetKey, id) => {
    expect(() => materializationLocation('file:///data', assetKey, id)).toThrow(StorageLocationError);
  });
});

describe('storageDriverFor', () => {
  it('gives a file driver for a file:// prefix, whatever the scheme case', () => {
    expect(storageDriverFor('file:///data/prod')).toBeInstanceOf(FileStorageDriver);
    expect(storageDriverFor('FILE:///data/prod')).toBeInstanceOf(FileStorageDriver);
  });

  it('refuses another scheme, naming it and the supported ones', () => {
    const error = (() => {
      try {
        storageDriverFor('gs://bucket/prod');
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(UnsupportedStorageError);
    expect((error as UnsupportedStorageError).scheme).toBe('gs');
    expect((error as Error).message).toBe('Storage scheme "gs://" of "gs://bucket/prod" is not supported; supported schemes: file://, s3://.');
  });

  it('gives an S3 driver for an s3:// prefix only with a connection', () => {
    expect(() => storageDriverFor('s3://lake/prod')).toThrow(/its binding's connection \(endpoint and keys\) is needed/);
    const connection = { endpoint: 'http://127.0.0.1:1', region: 'us-east-1', forcePathStyle: true, accessKeyId: 'a', secretAccessKey: 'b', keyPrefix: 't1/' };
    const driver = storageDriverFor('s3://lake/prod', connection) as S3StorageDriver;
    expect(driver).toBeInstanceOf(S3StorageDriver);
    expect(driver.objectOf('s3://lake/prod/orders/mat_1.parquet')).toEqual({ bucket: 'lake', key: 't1/prod/orders/mat_1.parquet' });
    expect(() => driver.objectOf('s3://lake/production/x.parquet')).toThrow(StorageLocationError);
    expect(() => driver.objectOf('s3://lake/prod/../x.parquet')).toThrow(StorageLocationError);
  });

  it('refuses a prefix that is not a URL', () => {
    expect(() => storageDriverFor('/var/data')).toThrow(UnsupportedStorageError);
    expect(() => storageDriverFor('/var/data')).toThrow(/not a URL; supported schemes: file:\/\/, s3:\/\//);
  });

  it.each(['file://relative/dir', 'file:relative', 'file://other-host/data', 'file:///data?x=1', 'file:///data/../etc'])(
    'refuses the file prefix %s, which is not an absolute local directory',
    (storagePrefix) => {
      expect(() => storageDriverFor(storagePrefix)).toThrow(StorageLocationError);
    },
  );
});

describe('FileStorageDriver', () => {
  it('creates the directories, stores the bytes and reads them back', async () => {
    const driver = new FileStorageDriver(prefix);
    const location = materializationLocation(prefix, 'orders', 'mat_01');
    expect(await driver.write(location, bytesOf('first'))).toEqual({ location, bytes: 5 });
    expect(await readFile(join(root, 'orders', 'mat_01.parquet'), 'utf8')).toBe('first');
    expect(new TextDecoder().decode(await driver.read(location))).toBe('first');
  });

  it('accepts file://localhost/ and percent-encoded names', async () => {
    const driver = new FileStorageDriver(prefix);
    await driver.write(`file://localhost${root}/a%20b/c.parquet`, bytesOf('x'));
    expect(await readFile(join(root, 'a b', 'c.parquet'), 'utf8')).toBe('x');
  });

  it('replaces a file and leaves no temporary file behind', async () => {
    const driver = new FileStorageDriver(prefix);
    const location = `${prefix}/orders/mat_01.parquet`;
    await driver.write(location, bytesOf('first'));
    await driver.write(location, bytesOf('second, longer'));
    expect(await readdir(join(root, 'orders'))).toEqual(['mat_01.parquet']);
    expect(await readFile(join(root, 'orders', 'mat_01.parquet'), 'utf8')).toBe('second, longer');
  });

  it('removes its temporary file when the final rename fails', async () => {
    const driver = new FileStorageDriver(prefix);
    await mkdir(join(root, 'orders', 'mat_01.parquet', 'occupied'), { recursive: true });
    await expect(driver.write(`${prefix}/orders/mat_01.parquet`, bytesOf('x'))).rejects.toThrow();
    expect(await readdir(join(root, 'orders'))).toEqual(['mat_01.parquet']);
  });

  it('never lets a concurrent reader see part of a file', async () => {
    const driver = new FileStorageDriver(prefix);
    const location = `${prefix}/big/mat_01.parquet`;
    const versions = ['a', 'b', 'c', 'd', 'e', 'f'].map((letter) => new Uint8Array(4 * 1024 * 1024).fill(letter.charCodeAt(0)));
    await driver.write(location, versions[0]!);
    let writing = true;
    const seen: string[] = [];
    const reader = (async () => {
      while (writing) {
        const bytes = await driver.read(location);
        const whole = bytes.byteLength === versions[0]!.byteLength && bytes.every((byte) => byte === bytes[0]);
        seen.push(whole ? 'whole' : `partial (${bytes.byteLength} bytes)`);
      }
    })();
    for (const version of versions.slice(1)) await driver.write(location, version);
    writing = false;
    await reader;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((outcome) => outcome !== 'whole')).toEqual([]);
  });

  it.each([
    ['a ".." segment', (p: string) => `${p}/orders/../../escaped.parquet`],
    ['a percent-encoded ".." segment', (p: string) => `${p}/orders/%2e%2E/%2E%2e/escaped.parquet`],
    ['an encoded slash', (p: string) => `${p}/orders/..%2F..%2Fescaped.parquet`],
    ['a backslash', (p: string) => `${p}/orders\\..\\..\\escaped.parquet`],
    ['a "." segment', (p: string) => `${p}/./orders/mat.parquet`],
    ['an empty segment', (p: string) => `${p}//orders/mat.parquet`],
    ['a sibling directory sharing the prefix', (p: string) => `${p}-sibling/orders/mat.parquet`],
    ['the prefix itself', (p: string) => p],
    ['another scheme', (p: string) => p.replace('file:', 's3:')],
  ])('refuses a location with %s', async (_what, locate) => {
    const driver = new FileStorageDriver(`${prefix}/env`);
    const location = locate(`${prefix}/env`);
    await expect(driver.write(location, bytesOf('x'))).rejects.toThrow(StorageLocationError);
    await expect(driver.read(location)).rejects.toThrow(StorageLocationError);
    expect(await readdir(root)).toEqual([]);
  });

  it('reports a missing file as StoredFileNotFoundError', async () => {
    const driver = new FileStorageDriver(prefix);
    await writeFile(join(root, 'other.parquet'), 'x');
    await expect(driver.read(`${prefix}/orders/missing.parquet`)).rejects.toThrow(StoredFileNotFoundError);
  });
});

describe('s3StoragePrefixProblem', () => {
  it.each(['s3://lake/prod', 's3://lake/prod/', 's3://b/p', 's3://lake/team/prod', 'file:///data', 'p'])('accepts %s (a bucket and a path; other schemes are not its business)', (prefix) => {
    expect(s3StoragePrefixProblem(prefix)).toBeNull();
  });

  it.each([
    's3://', 's3:///prod', 's3://lake', 's3://lake/', 's3://lake//prod', 's3://lake/../prod', 's3://lake/./prod', 's3://lake/prod/..',
    's3://lake?x=1', 's3://lake/p?x', 's3://la ke/p', 's3://lake/*', 's3://lake/pr*d', 's3://la*/prod',
  ])('refuses %s, saying what an s3:// prefix is', (prefix) => {
    expect(s3StoragePrefixProblem(prefix)).toMatch(/^An s3:\/\/ storage prefix is s3:\/\/<bucket>\/<path>: a bucket and at least one path segment/);
  });
});

describe('storagePrefixProblem', () => {
  it.each(['s3://lake/prod', 'file:///srv/lake/prod', 'FILE:///srv/lake', 'S3://lake/p'])('accepts %s', (prefix) => {
    expect(storagePrefixProblem(prefix, '/srv/lake')).toBeNull();
  });

  it.each([
    ['/tmp/x', 'has no scheme'],
    ['prod', 'has no scheme'],
    ['gs://bucket/prod', 'has the scheme gs://, which has no driver'],
    ['abfs://c@a.dfs.core.windows.net/p', 'has the scheme abfs://, which has no driver'],
  ])('refuses %s: it %s', (prefix, reason) => {
    expect(storagePrefixProblem(prefix, '/srv/lake')).toBe(
      `A storage prefix is s3://<bucket>/<path> or file://<path under the engine's storage root>; ${prefix} ${reason}.`,
    );
  });

  it('keeps the file:// and s3:// rules', () => {
    expect(storagePrefixProblem('file:///etc', '/srv/lake')).toMatch(/under the engine's storage root/);
    expect(storagePrefixProblem('s3://lake', '/srv/lake')).toMatch(/^An s3:\/\/ storage prefix/);
  });
});

describe('FileStorageDriver.listWritten', () => {
  it('lists the files the engine wrote one directory down, in pages, and nothing else', async () => {
    const driver = new FileStorageDriver(prefix);
    for (const [directory, name] of [
      ['orders', 'mat_01.parquet'],
      ['orders', 'mat_02.parquet'],
      ['orders', '.mat_03.parquet.a1b2c3.partial'],
      ['revenue', 'mat_04.parquet'],
      ['orders', 'notes.txt'],
      ['orders', 'mat_05.csv'],
    ]) {
      await mkdir(join(root, directory!), { recursive: true });
      await writeFile(join(root, directory!, name!), 'x');
    }
    // Another environment's prefix inside this one: its files are one level further down.
    await mkdir(join(root, 'nested', 'orders'), { recursive: true });
    await writeFile(join(root, 'nested', 'orders', 'mat_09.parquet'), 'x');
    await writeFile(join(root, 'mat_00.parquet'), 'x');

    const all: string[] = [];
    const pages: number[] = [];
    for (let after: string | null = null; ; ) {
      const page = await driver.listWritten(after, 2);
      all.push(...page.locations);
      pages.push(page.locations.length);
      if (page.next === null) break;
      after = page.next;
    }
    expect(all).toEqual([
      `${prefix}/orders/.mat_03.parquet.a1b2c3.partial`,
      `${prefix}/orders/mat_01.parquet`,
      `${prefix}/orders/mat_02.parquet`,
      `${prefix}/revenue/mat_04.parquet`,
    ]);
    expect(pages).toEqual([2, 2]);
  });

  it('lists nothing under a prefix nothing was written to', async () => {
    expect(await new FileStorageDriver(`${prefix}/never`).listWritten(null, 10)).toEqual({ locations: [], next: null });
  });
});

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BundleCache, BundleTooLargeError, claimCacheDirectory, releaseCacheDirectory, type BundleCacheLimits } from './bundle-cache.ts';

const MB = 1024 * 1024;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bundle-cache-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function tarGz(files: Record<string, Buffer | string>, level = 6): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name, size: Buffer.byteLength(content) }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks), { level });
}

const refOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** A fetcher of these bundles that counts its calls. */
function server(...bundles: Buffer[]) {
  const byRef = new Map(bundles.map((bytes) => [refOf(bytes), bytes]));
  const fetched: string[] = [];
  return {
    fetched,
    fetch: async (ref: string) => {
      fetched.push(ref);
      return Readable.from([byRef.get(ref)!]);
    },
  };
}

/** Bytes of every file under the cache directory. */
function bytesOnDisk(root: string): number {
  let total = 0;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

const limits = (over: Partial<BundleCacheLimits> = {}): BundleCacheLimits => ({ maxUnpackedBytes: 64 * MB, maxFiles: 100, maxCacheBytes: 1024 * MB, ...over });

describe('BundleCache', () => {
  it('fetches a bundle once and serves it from disk after', async () => {
    const bytes = await tarGz({ 'assets/a.js': 'export default () => {}' });
    const { fetch, fetched } = server(bytes);
    const cache = new BundleCache(dir, limits());
    const first = await cache.open(refOf(bytes), fetch, 'ten_a/env_a');
    first.release();
    const second = await cache.open(refOf(bytes), fetch, 'ten_a/env_a');
    expect(second.directory).toBe(first.directory);
    expect(existsSync(join(second.directory, 'assets/a.js'))).toBe(true);
    expect(fetched).toHaveLength(1);
  });

  it('refuses a tar bomb while unpacking and keeps nothing of it', async () => {
    const bytes = await tarGz({ 'bomb.bin': Buffer.alloc(32 * MB) }, 9);
    const { fetch } = server(bytes);
    const cache = new BundleCache(dir, limits({ maxUnpackedBytes: 4 * MB }));
    await expect(cache.open(refOf(bytes), fetch, 'ten_a/env_a')).rejects.toThrow(new BundleTooLargeError(`the bundle unpacks to more than ${4 * MB} bytes (BUNDLE_MAX_UNPACKED_MB)`));
    expect(readdirSync(dir)).toEqual([]);
    // Control: under a limit it fits, it unpacks.
    const roomy = new BundleCache(dir, limits({ maxUnpackedBytes: 64 * MB }));
    await expect(roomy.open(refOf(bytes), fetch, 'ten_a/env_a')).resolves.toMatchObject({ directory: expect.any(String) });
  });

  it('refuses a bundle of more files than the limit', async () => {
    const bytes = await tarGz(Object.fromEntries(Array.from({ length: 11 }, (_, index) => [`f${index}.js`, 'x'])));
    const cache = new BundleCache(dir, limits({ maxFiles: 10 }));
    await expect(cache.open(refOf(bytes), server(bytes).fetch, 'ten_a/env_a')).rejects.toThrow('the bundle holds more than 10 files (BUNDLE_MAX_FILES)');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('stays under its bound over many distinct bundles, removing the least recently used, never one in use', async () => {
    // Incompressible content: each bundle is about 200 KB packed and 200 KB unpacked.
    const bundles = await Promise.all(Array.from({ length: 12 }, (_, index) => tarGz({ 'data.bin': createHash('sha512').update(String(index)).digest().toString('hex').repeat(800) + 'x'.repeat(index) }, 0)));
    const { fetch, fetched } = server(...bundles);
    const cache = new BundleCache(dir, limits({ maxCacheBytes: 2 * MB }));
    const held = await cache.open(refOf(bundles[0]!), fetch, 'ten_a/env_a');
    for (const bytes of bundles.slice(1)) {
      const opened = await cache.open(refOf(bytes), fetch, 'ten_a/env_a');
      opened.release();
      // Bundle 2 is run again after each new one: the most recently used, whatever its age.
      if (bytes !== bundles[1]) (await cache.open(refOf(bundles[2]!), fetch, 'ten_a/env_a')).release();
      expect(bytesOnDisk(dir)).toBeLessThanOrEqual(2 * MB);
    }
    expect(cache.bytes).toBe(bytesOnDisk(dir));
    // The one in use stayed; of the released ones, the least recently used went (first in would have taken bundle 2).
    const cached = (index: number) => existsSync(join(dir, refOf(bundles[index]!).slice(7)));
    expect(existsSync(held.directory)).toBe(true);
    expect(readdirSync(dir).filter((name) => name.endsWith('.tar.gz')).length).toBeLessThan(bundles.length);
    expect([cached(1), cached(2), cached(3), cached(11)]).toEqual([false, true, false, true]);
    // Never evicted, so fetched once.
    expect(fetched.filter((ref) => ref === refOf(bundles[2]!))).toHaveLength(1);
  });

  it('drops a bundle when every environment that ran it is retired, at its last release when it is in use', async () => {
    const shared = await tarGz({ 'shared.js': 'x' });
    const own = await tarGz({ 'own.js': 'y' });
    const { fetch } = server(shared, own);
    const cache = new BundleCache(dir, limits());
    (await cache.open(refOf(shared), fetch, 'ten_a/env_1')).release();
    (await cache.open(refOf(shared), fetch, 'ten_a/env_2')).release();
    const held = await cache.open(refOf(own), fetch, 'ten_a/env_1');
    await cache.retire('ten_a/env_1');
    // Shared with env_2: kept. Its own, still running: kept until released.
    expect(existsSync(join(dir, refOf(shared).slice(7)))).toBe(true);
    expect(existsSync(held.directory)).toBe(true);
    held.release();
    await vi.waitFor(() => expect(existsSync(held.directory)).toBe(false));
    await cache.retire('ten_a/env_2');
    expect(readdirSync(dir)).toEqual([]);
    expect(cache.bytes).toBe(0);
  });

  it('keeps who ran a bundle across a restart', async () => {
    const bytes = await tarGz({ 'a.js': 'a' });
    (await new BundleCache(dir, limits()).open(refOf(bytes), server(bytes).fetch, 'ten_a/env_1')).release();
    const again = new BundleCache(dir, limits());
    await again.retire('ten_a/env_1');
    expect(readdirSync(dir)).toEqual([]);
  });

  it("is one process's alone: a directory another live worker holds is left for a sibling, one of a gone worker taken over", async () => {
    expect(await claimCacheDirectory(dir)).toBe(dir);
    expect(await claimCacheDirectory(dir)).toBe(dir);
    // Held by a live process (the test runner's parent): the next free sibling.
    await writeFile(join(dir, '.owner'), String(process.ppid));
    expect(await claimCacheDirectory(dir)).toBe(`${dir}-2`);
    // Held by a process that is gone: taken over.
    await writeFile(join(dir, '.owner'), '999999999');
    expect(await claimCacheDirectory(dir)).toBe(dir);
    await releaseCacheDirectory(dir);
    expect(existsSync(join(dir, '.owner'))).toBe(false);
    await rm(`${dir}-2`, { recursive: true, force: true });
  });

  it('counts what an earlier process left, and removes half-written entries', async () => {
    const bytes = await tarGz({ 'a.js': 'a' });
    const first = new BundleCache(dir, limits());
    (await first.open(refOf(bytes), server(bytes).fetch, 'ten_a/env_a')).release();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, `${'f'.repeat(64)}.tar.gz.abc.partial`), 'half');
    const again = new BundleCache(dir, limits());
    const { fetch, fetched } = server(bytes);
    (await again.open(refOf(bytes), fetch, 'ten_a/env_a')).release();
    expect(fetched).toEqual([]);
    expect(again.bytes).toBe(bytesOnDisk(dir));
    expect(readdirSync(dir).some((name) => name.endsWith('.partial'))).toBe(false);
  });
});

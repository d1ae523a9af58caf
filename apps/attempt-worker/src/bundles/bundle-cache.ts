import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { processIsAlive } from '@envengine/process-kit';

/** Fetches a bundle's bytes (through the worker API). */
export type BundleFetcher = (bundleRef: string) => Promise<Readable>;

export class BundleDigestError extends Error {
  override readonly name = 'BundleDigestError';
}

/** A bundle over what the worker takes: unpacked size or file count (a tar bomb), or over the whole cache's bound. */
export class BundleTooLargeError extends Error {
  override readonly name = 'BundleTooLargeError';
}

export interface BundleCacheLimits {
  /** What one bundle may unpack to: everything inflated, tar headers included. */
  maxUnpackedBytes: number;
  /** Files and directories in one bundle. */
  maxFiles: number;
  /** The whole cache on disk (archives and unpacked files); past it the least recently used bundles not in use are removed. */
  maxCacheBytes: number;
}

/** A bundle's directory, kept on disk until released (an attempt runs from it). */
export interface HeldBundle {
  directory: string;
  release(): void;
}

/** One tenant's way to a bundle's directory (the cache, fetching with that tenant's identity), for one of its environments. */
export type BundleSource = (bundleRef: string, environmentId: string) => Promise<HeldBundle>;

export type BundleCacheEvent = 'hit' | 'fetched' | 'refused-tampered' | 'refused-too-large' | 'evicted' | 'retired';

interface CachedBundle {
  bytes: number;
  lastUsed: number;
  /** Attempts running from it: it is never evicted while any does. */
  holders: number;
  /** The environments (`<tenant>/<environment id>`) that ran it; once each is retired, it goes. */
  users: Set<string>;
  /** Every user retired while an attempt held it: it goes at the last release. */
  retired: boolean;
}

/**
 * Bundles cached by digest: `<dir>/<hex>.tar.gz` as fetched and `<dir>/<hex>/` unpacked, with
 * `<dir>/<hex>.files.json` listing the SHA-256 of every unpacked file. Before each use the
 * archive's digest and every unpacked file are checked; anything that does not match (a
 * tampered or half-written cache) is thrown away and fetched again, so code is downloaded
 * once per digest, not once per run, and never run from an altered copy. Unpacking stops at
 * the limits (docs/design.md#availability), and the cache keeps to its bound by removing the
 * least recently used bundles that no attempt is running from. One cache serves every tenant
 * of the worker; each call says how to fetch a missing bundle.
 */
export class BundleCache {
  private readonly inFlight = new Map<string, Promise<string>>();
  private readonly cached = new Map<string, CachedBundle>();
  private indexed: Promise<void> | undefined;

  constructor(
    private readonly dir: string,
    private readonly limits: BundleCacheLimits,
    private readonly onEvent: (event: BundleCacheEvent, bundleRef: string) => void = () => undefined,
  ) {}

  /**
   * The unpacked bundle's directory, verified, held until released. `user` names the
   * environment it runs for (`<tenant>/<environment id>`): `retire(user)` drops it.
   */
  async open(bundleRef: string, fetchBundle: BundleFetcher, user: string): Promise<HeldBundle> {
    const hex = digestOf(bundleRef);
    await (this.indexed ??= this.index());
    const entry = this.entryOf(hex);
    entry.holders += 1;
    entry.retired = false;
    let directory: string;
    try {
      // Concurrent attempts of one bundle share a single check or fetch.
      let pending = this.inFlight.get(hex);
      if (!pending) {
        pending = this.ensure(bundleRef, hex, fetchBundle).finally(() => this.inFlight.delete(hex));
        this.inFlight.set(hex, pending);
      }
      directory = await pending;
    } catch (error) {
      entry.holders -= 1;
      if (entry.bytes === 0 && entry.holders === 0) this.cached.delete(hex);
      throw error;
    }
    entry.lastUsed = Date.now();
    if (!entry.users.has(user)) {
      entry.users.add(user);
      await writeFile(join(this.dir, `${hex}.users.json`), JSON.stringify([...entry.users])).catch(() => undefined);
      entry.bytes = await this.sizeOnDisk(hex).catch(() => entry.bytes);
    }
    // Its use is kept on disk too, for the order of eviction after a restart.
    await utimes(join(this.dir, `${hex}.files.json`), new Date(), new Date()).catch(() => undefined);
    await this.evict();
    let released = false;
    return {
      directory,
      release: () => {
        if (released) return;
        released = true;
        entry.holders -= 1;
        if (entry.retired && entry.holders === 0) void this.drop(hex);
        void this.evict();
      },
    };
  }

  /**
   * An environment is gone (`<tenant>/<environment id>`): each bundle no other environment
   * ran leaves the cache now, or at its last release when an attempt still runs from it.
   */
  async retire(user: string): Promise<void> {
    await (this.indexed ??= this.index());
    for (const [hex, entry] of [...this.cached]) {
      if (!entry.users.delete(user)) continue;
      if (entry.users.size > 0) {
        await writeFile(join(this.dir, `${hex}.users.json`), JSON.stringify([...entry.users])).catch(() => undefined);
      } else if (entry.holders > 0) {
        entry.retired = true;
      } else {
        await this.drop(hex);
      }
    }
  }

  private async drop(hex: string): Promise<void> {
    // Fetched again meanwhile by another attempt: it stays.
    const entry = this.cached.get(hex);
    if (entry && entry.holders > 0) return;
    this.cached.delete(hex);
    await this.discard(hex);
    this.onEvent('retired', `sha256:${hex}`);
  }

  /** Bytes the cache holds on disk, as it counts them. */
  get bytes(): number {
    let total = 0;
    for (const entry of this.cached.values()) total += entry.bytes;
    return total;
  }

  private entryOf(hex: string): CachedBundle {
    let entry = this.cached.get(hex);
    if (!entry) {
      entry = { bytes: 0, lastUsed: 0, holders: 0, users: new Set(), retired: false };
      this.cached.set(hex, entry);
    }
    return entry;
  }

  /** What is on disk from before: complete bundles counted, half-written ones removed. */
  private async index(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const names = await readdir(this.dir);
    const complete = new Set(names.filter((name) => /^[0-9a-f]{64}\.files\.json$/.test(name)).map((name) => name.slice(0, 64)));
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const hex = /^[0-9a-f]{64}/.exec(name)?.[0];
      if (hex === undefined || !complete.has(hex) || name.endsWith('.partial')) await rm(join(this.dir, name), { recursive: true, force: true });
    }
    for (const hex of complete) {
      try {
        const listing = join(this.dir, `${hex}.files.json`);
        const entry = this.entryOf(hex);
        entry.lastUsed = (await stat(listing)).mtimeMs;
        entry.bytes = await this.sizeOnDisk(hex);
        entry.users = new Set(await readUsers(join(this.dir, `${hex}.users.json`)));
      } catch {
        this.cached.delete(hex);
        await this.discard(hex);
      }
    }
    await this.evict();
  }

  private async sizeOnDisk(hex: string): Promise<number> {
    const listing = JSON.parse(await readFile(join(this.dir, `${hex}.files.json`), 'utf8')) as Record<string, string>;
    let bytes = (await stat(join(this.dir, `${hex}.tar.gz`))).size + (await stat(join(this.dir, `${hex}.files.json`))).size;
    bytes += await stat(join(this.dir, `${hex}.users.json`)).then((stats) => stats.size, () => 0);
    for (const path of Object.keys(listing)) bytes += (await stat(join(this.dir, hex, path))).size;
    return bytes;
  }

  /** Removes the least recently used bundles no attempt holds until the cache is within its bound. */
  private async evict(): Promise<void> {
    for (;;) {
      if (this.bytes <= this.limits.maxCacheBytes) return;
      let oldest: [string, CachedBundle] | undefined;
      for (const candidate of this.cached) {
        if (candidate[1].holders === 0 && candidate[1].bytes > 0 && (oldest === undefined || candidate[1].lastUsed < oldest[1].lastUsed)) oldest = candidate;
      }
      // Everything left is in use: the cache is over its bound until an attempt ends.
      if (oldest === undefined) return;
      const [hex] = oldest;
      this.cached.delete(hex);
      await this.discard(hex);
      this.onEvent('evicted', `sha256:${hex}`);
    }
  }

  private async ensure(bundleRef: string, hex: string, fetchBundle: BundleFetcher): Promise<string> {
    const unpacked = join(this.dir, hex);
    const verdict = await this.verify(hex);
    if (verdict === 'ok') {
      this.onEvent('hit', bundleRef);
      return unpacked;
    }
    if (verdict === 'tampered') this.onEvent('refused-tampered', bundleRef);
    await this.discard(hex);
    await mkdir(this.dir, { recursive: true });
    const archive = join(this.dir, `${hex}.tar.gz`);
    const partial = `${archive}.${randomBytes(6).toString('hex')}.partial`;
    try {
      const hash = createHash('sha256');
      const source = await fetchBundle(bundleRef);
      source.on('data', (chunk: Buffer) => hash.update(chunk));
      await pipeline(source, createWriteStream(partial));
      const got = hash.digest('hex');
      if (got !== hex) throw new BundleDigestError(`bundle ${bundleRef} arrived with digest sha256:${got}; refused`);
      const files = await unpack(partial, unpacked, this.limits);
      await writeFile(join(this.dir, `${hex}.files.json`), JSON.stringify(files));
      await rename(partial, archive);
    } catch (error) {
      // Nothing of a refused or broken bundle stays on disk.
      await rm(partial, { force: true });
      await this.discard(hex);
      if (error instanceof BundleTooLargeError) this.onEvent('refused-too-large', bundleRef);
      throw error;
    }
    this.entryOf(hex).bytes = await this.sizeOnDisk(hex);
    this.onEvent('fetched', bundleRef);
    return unpacked;
  }

  private async verify(hex: string): Promise<'ok' | 'missing' | 'tampered'> {
    const archive = join(this.dir, `${hex}.tar.gz`);
    let listing: Record<string, string>;
    try {
      await stat(archive);
      listing = JSON.parse(await readFile(join(this.dir, `${hex}.files.json`), 'utf8')) as Record<string, string>;
    } catch {
      return 'missing';
    }
    if ((await sha256File(archive)) !== hex) return 'tampered';
    for (const [path, digest] of Object.entries(listing)) {
      try {
        if ((await sha256File(join(this.dir, hex, path))) !== digest) return 'tampered';
      } catch {
        return 'tampered';
      }
    }
    return 'ok';
  }

  private async discard(hex: string): Promise<void> {
    await Promise.all([
      rm(join(this.dir, hex), { recursive: true, force: true }),
      rm(join(this.dir, `${hex}.tar.gz`), { force: true }),
      rm(join(this.dir, `${hex}.files.json`), { force: true }),
      rm(join(this.dir, `${hex}.users.json`), { force: true }),
    ]);
  }
}

/** Other cache directories a worker tries when the one it was given is another live worker's. */
const SIBLING_DIRECTORIES = 16;


/**
 * The cache directory this process may use alone: `dir`, or where another live worker
 * holds it (two runners of one host given the same default), the first free of
 * `<dir>-2` … `<dir>-17`. Its `.owner` file names the process; one of a process that is
 * gone is taken over. A cache evicts and removes bundles, which must not happen under
 * another process's running attempt.
 */
export async function claimCacheDirectory(dir: string): Promise<string> {
  for (let index = 1; index <= SIBLING_DIRECTORIES + 1; index++) {
    const candidate = index === 1 ? dir : `${dir}-${index}`;
    await mkdir(candidate, { recursive: true });
    const owner = join(candidate, '.owner');
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await writeFile(owner, String(process.pid), { flag: 'wx' });
        return candidate;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = Number((await readFile(owner, 'utf8').catch(() => '')).trim());
      if (holder === process.pid) return candidate;
      if (Number.isInteger(holder) && holder > 0 && processIsAlive(holder)) break;
      // Its process is gone: the directory is free.
      await rm(owner, { force: true });
    }
  }
  throw new Error(`${dir} and its ${SIBLING_DIRECTORIES} siblings are each held by a running worker; give this one its own BUNDLE_CACHE_DIR`);
}

/** Gives the directory up (at exit), so that the next worker need not check the pid. */
export async function releaseCacheDirectory(dir: string): Promise<void> {
  const owner = join(dir, '.owner');
  if ((await readFile(owner, 'utf8').catch(() => '')).trim() === String(process.pid)) await rm(owner, { force: true });
}

async function readUsers(path: string): Promise<string[]> {
  try {
    const users: unknown = JSON.parse(await readFile(path, 'utf8'));
    return Array.isArray(users) ? users.filter((user): user is string => typeof user === 'string') : [];
  } catch {
    return [];
  }
}

function digestOf(bundleRef: string): string {
  const match = /^sha256:([0-9a-f]{64})$/.exec(bundleRef);
  if (!match) throw new BundleDigestError(`"${bundleRef}" is not a bundle reference (sha256:<64 hex>)`);
  return match[1]!;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * Unpacks regular files and directories only (no links), refusing paths that leave the
 * directory, and stopping at the limits: everything inflated counts (a file's declared
 * size is refused before it is written), and so does each entry.
 */
async function unpack(archive: string, into: string, limits: BundleCacheLimits): Promise<Record<string, string>> {
  await mkdir(into, { recursive: true });
  const files: Record<string, string> = {};
  const gunzip = createGunzip();
  let inflated = 0;
  let entries = 0;
  const overUnpacked = () => new BundleTooLargeError(`the bundle unpacks to more than ${limits.maxUnpackedBytes} bytes (BUNDLE_MAX_UNPACKED_MB)`);
  gunzip.on('data', (chunk: Buffer) => {
    inflated += chunk.length;
    if (inflated > limits.maxUnpackedBytes) gunzip.destroy(overUnpacked());
  });
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    // A refusal destroys the entry being read with it: its error is the refusal's.
    stream.on('error', () => undefined);
    void (async () => {
      entries += 1;
      if (entries > limits.maxFiles) throw new BundleTooLargeError(`the bundle holds more than ${limits.maxFiles} files (BUNDLE_MAX_FILES)`);
      if (inflated + (header.size ?? 0) > limits.maxUnpackedBytes) throw overUnpacked();
      const name = normalize(header.name).replace(/^(\.\/)+/, '');
      if (isAbsolute(name) || name === '..' || name.startsWith(`..${sep}`)) throw new BundleDigestError(`bundle entry "${header.name}" leaves the bundle`);
      const target = join(into, name);
      if (header.type === 'directory') {
        await mkdir(target, { recursive: true });
        stream.resume();
      } else if (header.type === 'file') {
        await mkdir(dirname(target), { recursive: true });
        const hash = createHash('sha256');
        stream.on('data', (chunk: unknown) => hash.update(chunk as Buffer));
        await pipeline(stream, createWriteStream(target));
        files[name] = hash.digest('hex');
      } else {
        stream.resume();
      }
    })().then(() => next(), (error: unknown) => next(error as Error));
  });
  await pipeline(createReadStream(archive), gunzip, extract);
  return files;
}

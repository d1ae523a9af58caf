import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';

/** Fetches a bundle's bytes (through the worker API). */
export type BundleFetcher = (bundleRef: string) => Promise<Readable>;

export class BundleDigestError extends Error {
  override readonly name = 'BundleDigestError';
}

/**
 * Bundles cached by digest: `<dir>/<hex>.tar.gz` as fetched and `<dir>/<hex>/` unpacked,
 * with `<dir>/<hex>.files.json` listing the SHA-256 of every unpacked file. Before each
 * use the archive's digest and every unpacked file are checked; anything that does not
 * match (a tampered or half-written cache) is thrown away and fetched again, so code is
 * downloaded once per digest, not once per run, and never run from an altered copy.
 */
export class BundleCache {
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly dir: string,
    private readonly fetchBundle: BundleFetcher,
    private readonly onEvent: (event: 'hit' | 'fetched' | 'refused-tampered', bundleRef: string) => void = () => undefined,
  ) {}

  /** The unpacked bundle's directory, verified. */
  async directoryFor(bundleRef: string): Promise<string> {
    const hex = digestOf(bundleRef);
    // Concurrent attempts of one bundle share a single check or fetch.
    const pending = this.inFlight.get(hex);
    if (pending) return pending;
    const work = this.ensure(bundleRef, hex).finally(() => this.inFlight.delete(hex));
    this.inFlight.set(hex, work);
    return work;
  }

  private async ensure(bundleRef: string, hex: string): Promise<string> {
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
    const hash = createHash('sha256');
    const source = await this.fetchBundle(bundleRef);
    source.on('data', (chunk: Buffer) => hash.update(chunk));
    await pipeline(source, createWriteStream(partial));
    const got = hash.digest('hex');
    if (got !== hex) {
      await rm(partial, { force: true });
      throw new BundleDigestError(`bundle ${bundleRef} arrived with digest sha256:${got}; refused`);
    }
    const files = await unpack(partial, unpacked);
    await writeFile(join(this.dir, `${hex}.files.json`), JSON.stringify(files));
    await rename(partial, archive);
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
    ]);
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

/** Unpacks regular files and directories only (no links), refusing paths that leave the directory. */
async function unpack(archive: string, into: string): Promise<Record<string, string>> {
  await mkdir(into, { recursive: true });
  const files: Record<string, string> = {};
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    void (async () => {
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
  await pipeline(createReadStream(archive), createGunzip(), extract);
  return files;
}

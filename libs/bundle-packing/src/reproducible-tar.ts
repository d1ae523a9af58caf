import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/** One file of a bundle: a path inside the archive (`/`-separated, relative) and its bytes. */
export interface BundleFile {
  path: string;
  content: Uint8Array | string;
  /** Packed with mode 0755 instead of 0644. Default false. */
  executable?: boolean;
}

/** Every entry's modification time: the epoch, so that a checkout's clock never shows. */
const FIXED_MTIME = new Date(0);
/** Byte 9 of a gzip header names the OS that wrote it; one value on every platform. */
const GZIP_OS_BYTE = 9;
const GZIP_OS_UNIX = 3;

function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A tar.gz whose bytes depend only on the files' paths, contents and executable bits:
 * entries sorted by path, the epoch as every mtime, owner 0:0 with no user or group names,
 * modes 0644/0755, a gzip header without a time stamp. The same files give the same
 * `bundle_ref` on any machine running the same zlib.
 */
export async function packReproducible(files: readonly BundleFile[]): Promise<Buffer> {
  const sorted = files
    .map((file) => ({ ...file, path: file.path.normalize('NFC') }))
    .sort((a, b) => comparePaths(a.path, b.path));
  sorted.forEach((file, index) => {
    if (index > 0 && sorted[index - 1]!.path === file.path) throw new Error(`the bundle lists "${file.path}" twice`);
    if (file.path === '' || file.path.startsWith('/') || file.path.split('/').some((segment) => segment === '..' || segment === '.' || segment === '')) {
      throw new Error(`bundle path "${file.path}" must be relative, "/"-separated, without "." or ".." segments`);
    }
  });
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const collected = (async () => {
    for await (const chunk of pack) chunks.push(chunk as Buffer);
  })();
  for (const file of sorted) {
    const content = typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : Buffer.from(file.content);
    await new Promise<void>((resolve, reject) => {
      pack.entry(
        { name: file.path, type: 'file', size: content.length, mode: file.executable ? 0o755 : 0o644, mtime: FIXED_MTIME, uid: 0, gid: 0, uname: '', gname: '' },
        content,
        (error) => (error ? reject(error) : resolve()),
      );
    });
  }
  pack.finalize();
  await collected;
  const gzipped = gzipSync(Buffer.concat(chunks), { level: 9 });
  gzipped[GZIP_OS_BYTE] = GZIP_OS_UNIX;
  return gzipped;
}

/** The `bundle_ref` the server computes for these bytes: `sha256:<64 hex>`. */
export function bundleRefOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

import { PassThrough, Readable, Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { readBundle, storedBundleFiles } from './bundle-reader.ts';

async function tarGz(files: Record<string, Buffer | string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks), { level: 0 });
}

function collector(): Writable & { received: number } {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      sink.received += chunk.length;
      callback();
    },
  }) as Writable & { received: number };
  sink.received = 0;
  return sink;
}

/** Splits bytes into small chunks, as a network upload arrives. */
const inChunks = (bytes: Buffer, size = 1024) =>
  Readable.from(Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)));

/** The upload limit given, and generous unpacked limits unless a case sets them. */
const limits = (bytes: number, unpacked: Partial<{ unpackedBytes: number; files: number }> = {}) => ({ bytes, unpackedBytes: 64 * 1024 * 1024, files: 1000, ...unpacked });

/** A tar bomb: one file of `size` zero bytes, gzipped at the highest level (about 1,000:1). */
async function bomb(size: number): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name: 'bomb.bin', size }, Buffer.alloc(size));
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks), { level: 9 });
}

type TarHeader = Partial<tar.Header> & Pick<tar.Header, 'name'>;

/** A tar.gz of these headers (a file's content is a line of text): links, devices and paths as given. */
async function tarGzOf(headers: ReadonlyArray<TarHeader>): Promise<Buffer> {
  const pack = tar.pack();
  for (const header of headers) {
    if (header.type === undefined || header.type === 'file') pack.entry(header, 'export default () => {};\n');
    else pack.entry(header);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

describe('readBundle', () => {
  it('hashes, counts and lists a tar.gz while passing every byte on', async () => {
    const bytes = await tarGz({ './assets/a.js': 'a', 'assets/b.js': 'b', 'package.json': '{}' });
    const sink = collector();
    const read = await readBundle(inChunks(bytes), sink, limits(1024 * 1024));
    const sha = (content: string) => createHash('sha256').update(content).digest('hex');
    expect(read).toEqual({
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      entries: ['assets/a.js', 'assets/b.js', 'package.json'],
      files: [{ path: 'assets/a.js', sha256: sha('a') }, { path: 'assets/b.js', sha256: sha('b') }, { path: 'package.json', sha256: sha('{}') }],
    });
    expect(sink.received).toBe(bytes.length);
  });

  it('lists a stored bundle\'s files with their content hashes, as its upload did', async () => {
    const bytes = await tarGz({ './assets/a.js': 'a', 'package.json': '{}' });
    const read = await readBundle(inChunks(bytes), collector(), limits(1024 * 1024));
    expect(await storedBundleFiles(inChunks(bytes))).toEqual(read.files);
  });

  it('stops at the limit with 413, before reading the rest', async () => {
    const bytes = await tarGz({ 'big.bin': Buffer.alloc(200_000, 1) });
    const sink = collector();
    await expect(readBundle(inChunks(bytes), sink, limits(50_000))).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(sink.received).toBeLessThanOrEqual(50_000);
  });

  it.each([
    ['bytes that are not gzip', Buffer.from('not an archive at all '.repeat(500))],
    ['gzip of text that is not tar', gzipSync(Buffer.from('plain words '.repeat(500)))],
    ['an archive without files', gzipSync(Buffer.alloc(1024))],
    ['nothing', Buffer.alloc(0)],
  ])('refuses %s with 422', async (_what, bytes) => {
    await expect(readBundle(inChunks(bytes), collector(), limits(1024 * 1024))).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a truncated archive with 422', async () => {
    const bytes = await tarGz({ 'a.js': Buffer.alloc(100_000, 2) });
    await expect(readBundle(inChunks(bytes.subarray(0, 60_000)), collector(), limits(1024 * 1024))).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a tar bomb with 413 naming the unpacked limit, from the header, before inflating its content', async () => {
    const bytes = await bomb(64 * 1024 * 1024);
    expect(bytes.length).toBeLessThan(100 * 1024);
    const sink = collector();
    const started = process.cpuUsage();
    await expect(readBundle(inChunks(bytes, 16 * 1024), sink, limits(1024 * 1024, { unpackedBytes: 8 * 1024 * 1024 }))).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'The bundle unpacks to more than 8388608 bytes (the limit of its unpacked size).',
    });
    // Inflating 64 MB would take far more CPU than reading one header (a control below).
    const refusedCpu = process.cpuUsage(started);
    const control = process.cpuUsage();
    await readBundle(inChunks(bytes, 16 * 1024), collector(), limits(1024 * 1024, { unpackedBytes: 128 * 1024 * 1024 }));
    const acceptedCpu = process.cpuUsage(control);
    expect(refusedCpu.user + refusedCpu.system).toBeLessThan((acceptedCpu.user + acceptedCpu.system) / 2);
  });

  it('refuses an archive of more files than the limit with 413, and takes one at the limit', async () => {
    const files = Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`f${index}.js`, 'x']));
    await expect(readBundle(inChunks(await tarGz(files)), collector(), limits(1024 * 1024, { files: 19 }))).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'The bundle holds more than 19 files (the limit of its file count).',
    });
    await expect(readBundle(inChunks(await tarGz(files)), collector(), limits(1024 * 1024, { files: 20 }))).resolves.toMatchObject({ entries: expect.any(Array) });
  });

  it('counts every inflated byte, headers included: a bundle just under the limit is taken, just over is refused', async () => {
    const bytes = await tarGz({ 'a.bin': Buffer.alloc(100_000, 1) });
    // The tar of one 100,000-byte file: a 512-byte header, the content padded to 100,352, two 512-byte end blocks (and tar-stream's padding to a record).
    const inflated = (await import('node:zlib')).gunzipSync(bytes).length;
    await expect(readBundle(inChunks(bytes), collector(), limits(1024 * 1024, { unpackedBytes: inflated }))).resolves.toMatchObject({ entries: ['a.bin'] });
    await expect(readBundle(inChunks(bytes), collector(), limits(1024 * 1024, { unpackedBytes: inflated - 1 }))).rejects.toMatchObject({ code: 'payload_too_large' });
  });

  it.each([
    ['with an error (a reset connection)', new Error('aborted')],
    ['without one (closed)', undefined],
  ])('settles when the upload breaks off %s, and the sink is not left open', async (_how, error) => {
    const bytes = await tarGz({ 'big.bin': Buffer.alloc(200_000, 1) });
    const upload = new PassThrough();
    const sink = collector();
    const reading = readBundle(upload, sink, limits(1024 * 1024));
    upload.write(bytes.subarray(0, 60_000));
    await new Promise((resolve) => setImmediate(resolve));
    upload.destroy(error);
    await expect(reading).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('ended before its last byte') });
    expect(sink.destroyed).toBe(true);
    expect(sink.writableFinished).toBe(false);
  });

  const fine: TarHeader = { name: 'assets/fine.js' };
  it.each<[string, TarHeader, string]>([
    ['a path up out of the bundle', { name: '../escape.js' }, 'its path leaves the bundle (through "..")'],
    ['a path that goes down, then up out of it', { name: 'assets/../../escape.js' }, 'its path leaves the bundle (through "..")'],
    ['an absolute path', { name: '/etc/cron.d/evil' }, 'its path is absolute'],
    ['a symbolic link out of the bundle', { name: 'assets/passwd', type: 'symlink', linkname: '../../etc/passwd' }, 'it is a symbolic link to "../../etc/passwd", outside the bundle'],
    ['a symbolic link to an absolute path', { name: 'assets/passwd', type: 'symlink', linkname: '/etc/passwd' }, 'it is a symbolic link to "/etc/passwd", outside the bundle'],
    ['a hard link out of the bundle', { name: 'assets/hard', type: 'link', linkname: '../outside.js' }, 'it is a hard link to "../outside.js", outside the bundle'],
    ['a character device', { name: 'assets/null', type: 'character-device', devmajor: 1, devminor: 3 }, 'it is a character-device entry; a bundle holds files, folders and links inside it only'],
    ['a FIFO', { name: 'assets/pipe', type: 'fifo' }, 'it is a fifo entry; a bundle holds files, folders and links inside it only'],
  ])('refuses %s with 422 naming the entry, storing none of what follows', async (_what, bad, reason) => {
    const sink = collector();
    const bytes = await tarGzOf([fine, bad, { name: 'assets/after.js' }]);
    const refusal = readBundle(inChunks(bytes, 256), sink, limits(1024 * 1024));
    await expect(refusal).rejects.toMatchObject({
      code: 'invalid_request',
      message: `The bundle's entry ${JSON.stringify(bad.name)} is refused: ${reason}. Nothing was stored.`,
      details: [{ path: '(body)', message: `entry ${JSON.stringify(bad.name)}: ${reason}` }],
    });
  });

  it('takes paths that stay inside after "..", and links to entries inside the bundle', async () => {
    const bytes = await tarGzOf([
      { name: './assets/a.js' },
      { name: 'assets/../lib/b.js' },
      { name: 'assets', type: 'directory' },
      { name: 'assets/link.js', type: 'symlink', linkname: '../lib/b.js' },
      { name: 'assets/hard.js', type: 'link', linkname: 'assets/a.js' },
    ]);
    await expect(readBundle(inChunks(bytes), collector(), limits(1024 * 1024))).resolves.toMatchObject({ entries: ['assets/a.js', 'assets/../lib/b.js'] });
  });
});

import { Readable, Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { readBundle } from './bundle-reader.ts';

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

describe('readBundle', () => {
  it('hashes, counts and lists a tar.gz while passing every byte on', async () => {
    const bytes = await tarGz({ './assets/a.js': 'a', 'assets/b.js': 'b', 'package.json': '{}' });
    const sink = collector();
    const read = await readBundle(inChunks(bytes), sink, 1024 * 1024);
    expect(read).toEqual({ sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length, entries: ['assets/a.js', 'assets/b.js', 'package.json'] });
    expect(sink.received).toBe(bytes.length);
  });

  it('stops at the limit with 413, before reading the rest', async () => {
    const bytes = await tarGz({ 'big.bin': Buffer.alloc(200_000, 1) });
    const sink = collector();
    await expect(readBundle(inChunks(bytes), sink, 50_000)).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(sink.received).toBeLessThanOrEqual(50_000);
  });

  it.each([
    ['bytes that are not gzip', Buffer.from('not an archive at all '.repeat(500))],
    ['gzip of text that is not tar', gzipSync(Buffer.from('plain words '.repeat(500)))],
    ['an archive without files', gzipSync(Buffer.alloc(1024))],
    ['nothing', Buffer.alloc(0)],
  ])('refuses %s with 422', async (_what, bytes) => {
    await expect(readBundle(inChunks(bytes), collector(), 1024 * 1024)).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a truncated archive with 422', async () => {
    const bytes = await tarGz({ 'a.js': Buffer.alloc(100_000, 2) });
    await expect(readBundle(inChunks(bytes.subarray(0, 60_000)), collector(), 1024 * 1024)).rejects.toMatchObject({ code: 'invalid_request' });
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { createGzip, gzipSync } from 'node:zlib';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BundleUploaded, ErrorBody, dataEnvelope } from '@envengine/contracts';
import { createTenant, deployProject, makeBundle, until, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');
const gzip = { 'content-type': 'application/gzip' };

/** A ustar header of a regular file, written by hand: what follows it need not be all there. */
function tarHeader(name: string, size: number, type = '0', linkname = ''): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write('0000644\0', 100);
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  header.write('        ', 148);
  header.write(type, 156);
  header.write(linkname, 157);
  header.write('ustar\0', 257);
  header.write('00', 263);
  let checksum = 0;
  for (const byte of header) checksum += byte;
  header.write(`${checksum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
}

describe('bundles', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let bundle: Buffer;

  const mongo = new MongoClient(stack.mongoUrl);
  /**
   * The bundle bytes the deployment-service stores (GridFS) for this file's tenants:
   * `files` and their `chunks`. Other files upload to the same store at the same time,
   * so a chunk of no file yet is counted apart (`loose`): an upload in flight, anyone's,
   * or one a refused upload left behind. `large` counts loose chunks past the first
   * megabyte: only this file uploads that much.
   */
  const storedBundleFiles = async () => {
    const db = mongo.db(stack.databases['deployment-service']);
    const ours = [tenant.tenantId, other.tenantId];
    const files = await db.collection('bundle_files.files').countDocuments({ 'metadata.tenant_id': { $in: ours } });
    const [counts] = await db
      .collection('bundle_files.chunks')
      .aggregate<{ chunks: number; loose: number; large: number }>([
        { $lookup: { from: 'bundle_files.files', localField: 'files_id', foreignField: '_id', as: 'file', pipeline: [{ $project: { metadata: 1 } }] } },
        { $set: { loose: { $eq: [{ $size: '$file' }, 0] }, ours: { $in: [{ $first: '$file.metadata.tenant_id' }, ours] } } },
        {
          $group: {
            _id: null,
            chunks: { $sum: { $cond: ['$ours', 1, 0] } },
            loose: { $sum: { $cond: ['$loose', 1, 0] } },
            large: { $sum: { $cond: [{ $and: ['$loose', { $gte: ['$n', 4] }] }, 1, 0] } },
          },
        },
      ])
      .toArray();
    return { files, chunks: counts?.chunks ?? 0, loose: counts?.loose ?? 0, large: counts?.large ?? 0 };
  };
  /** Waits until no upload is in flight or left behind (30 s at most), and answers the counts then. */
  const settledBundleFiles = async () => {
    const now = await until(storedBundleFiles, (counts) => counts.loose === 0, 30_000, 100);
    return { files: now.files, chunks: now.chunks, loose: now.loose };
  };
  afterAll(() => mongo.close());

  beforeAll(async () => {
    tenant = await createTenant(stack, 'bundles');
    other = await createTenant(stack, 'bundles-other');
    bundle = await makeBundle({ 'assets/orders.js': 'export default async (ctx) => ctx.emit([])', 'package.json': '{}' });
  });

  it('stores an upload (201), hashes it itself, and answers 200 with the same ref for the same bytes', async () => {
    const first = await tenant.api.request('POST', '/bundles', { raw: bundle, headers: gzip });
    expect(first.status).toBe(201);
    const ref = `sha256:${createHash('sha256').update(bundle).digest('hex')}`;
    expect(dataEnvelope(BundleUploaded).parse(first.body)).toEqual({ data: { bundle_ref: ref, size: bundle.length } });
    const again = await tenant.api.request('POST', '/bundles', { raw: bundle, headers: gzip });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await tenant.api.request('HEAD', `/bundles/${ref}`)).status).toBe(200);
  });

  it('is scoped to the caller: another tenant has no such bundle until it uploads it', async () => {
    const ref = `sha256:${createHash('sha256').update(bundle).digest('hex')}`;
    await tenant.api.request('POST', '/bundles', { raw: bundle, headers: gzip });
    expect((await other.api.request('HEAD', `/bundles/${ref}`)).status).toBe(404);
    expect((await other.api.request('POST', '/bundles', { raw: bundle, headers: gzip })).status).toBe(201);
  });

  it('answers 404 for an unknown or malformed ref', async () => {
    expect((await tenant.api.request('HEAD', `/bundles/sha256:${'0'.repeat(64)}`)).status).toBe(404);
    expect((await tenant.api.request('HEAD', '/bundles/not-a-ref')).status).toBe(404);
  });

  it.each([
    ['plain text', Buffer.from('this is not an archive')],
    ['gzip of something that is not tar', gzipSync(Buffer.from('plain words, not a tar archive '.repeat(40)))],
    ['a truncated tar.gz', Buffer.alloc(0)],
    ['gzip of nothing', gzipSync(Buffer.alloc(0))],
    ['an empty body', Buffer.alloc(0)],
  ])('refuses %s with 422 and stores nothing', async (what, given) => {
    const bytes = what === 'a truncated tar.gz' ? bundle.subarray(0, Math.floor(bundle.length / 2)) : given;
    const response = await tenant.api.request('POST', '/bundles', { raw: bytes, headers: gzip });
    expect(response.status).toBe(422);
    expect(ErrorBody.parse(response.body).error.code).toBe('invalid_request');
    const ref = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    expect((await tenant.api.request('HEAD', `/bundles/${ref}`)).status).toBe(404);
  });

  it.each([
    ['a path up out of the bundle', '../escape.js', '0', '', 'its path leaves the bundle (through "..")'],
    ['an absolute path', '/etc/cron.d/evil', '0', '', 'its path is absolute'],
    ['a symbolic link out of the bundle', 'assets/passwd', '2', '../../etc/passwd', 'it is a symbolic link to "../../etc/passwd", outside the bundle'],
    ['a hard link out of the bundle', 'assets/hard', '1', '../../outside.js', 'it is a hard link to "../../outside.js", outside the bundle'],
    ['a character device', 'assets/null', '3', '', 'it is a character-device entry; a bundle holds files, folders and links inside it only'],
  ])('refuses a bundle holding %s with 422 naming the entry, and keeps nothing of it', async (_what, name, type, linkname, reason) => {
    // A file first, so that the store has begun taking the upload when the entry is refused.
    const bytes = gzipSync(Buffer.concat([tarHeader('assets/fine.js', 0), tarHeader(name, 0, type, linkname), Buffer.alloc(1024)]));
    const stored = await settledBundleFiles();
    expect(stored.loose).toBe(0);
    const response = await tenant.api.request('POST', '/bundles', { raw: bytes, headers: gzip });
    expect(response.status).toBe(422);
    expect(ErrorBody.parse(response.body).error).toMatchObject({
      code: 'invalid_request',
      message: `The bundle's entry ${JSON.stringify(name)} is refused: ${reason}. Nothing was stored.`,
    });
    expect((await tenant.api.request('HEAD', `/bundles/sha256:${createHash('sha256').update(bytes).digest('hex')}`)).status).toBe(404);
    expect(await settledBundleFiles()).toEqual(stored);
  });

  it('refuses a JSON body (wrong content type) with 422', async () => {
    const response = await tenant.api.post('/bundles', { files: [] });
    expect(response.status).toBe(422);
  });

  it('requires a token', async () => {
    expect((await tenant.api.withToken(undefined).request('POST', '/bundles', { raw: bundle, headers: gzip })).status).toBe(401);
  });

  it('refuses a tar bomb (600 MiB of zeros behind 1 MiB of noise, in under 2 MiB) with 413 naming the unpacked limit, and keeps nothing of it', async () => {
    const gzipped: Buffer[] = [];
    const deflate = createGzip({ level: 9 });
    deflate.on('data', (chunk: Buffer) => gzipped.push(chunk));
    // Incompressible bytes first, so that the store has taken some of the upload (GridFS
    // chunks of 255 KiB) before the bomb's header is refused: all of it must go.
    deflate.write(tarHeader('noise.bin', 1024 * 1024));
    deflate.write(randomBytes(1024 * 1024));
    const size = 600 * 1024 * 1024;
    deflate.write(tarHeader('bomb.bin', size));
    const zeros = Buffer.alloc(1024 * 1024);
    for (let written = 0; written < size + 1024; written += zeros.length) if (!deflate.write(zeros)) await once(deflate, 'drain');
    deflate.end();
    await once(deflate, 'end');
    const bomb = Buffer.concat(gzipped);
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const ref = `sha256:${createHash('sha256').update(bomb).digest('hex')}`;
    const stored = await settledBundleFiles();
    expect(stored.loose).toBe(0);
    // Another tenant's upload goes on beside it.
    const [response, beside] = await Promise.all([
      tenant.api.request('POST', '/bundles', { raw: bomb, headers: gzip }),
      other.api.request('POST', '/bundles', { raw: await makeBundle({ 'assets/beside.js': `export default () => '${Date.now()}'` }), headers: gzip }),
    ]);
    expect(beside.status).toBe(201);
    expect(response.status).toBe(413);
    expect(response.body.error).toMatchObject({ code: 'payload_too_large', message: `The bundle unpacks to more than ${512 * 1024 * 1024} bytes (the limit of its unpacked size).` });
    expect((await tenant.api.request('HEAD', `/bundles/${ref}`)).status).toBe(404);
    // Nothing of it is kept: the store holds the other tenant's one new bundle, no more.
    expect(await settledBundleFiles()).toEqual({ files: stored.files + 1, chunks: stored.chunks + 1, loose: 0 });
    // The service goes on: the next upload is stored.
    expect((await tenant.api.request('POST', '/bundles', { raw: await makeBundle({ 'assets/after.js': 'export default () => {}' }), headers: gzip })).status).toBe(201);
  });

  it('refuses a bundle of more files than the limit with 413 naming it, and runs one at the limit', async () => {
    const filler = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`data/f${index}.txt`, '']));
    const over = await makeBundle({ ...filler(10_000), 'assets/fine.js': 'export default () => {}' });
    const refused = await tenant.api.request('POST', '/bundles', { raw: over, headers: gzip });
    expect(refused.status).toBe(413);
    expect(refused.body.error).toMatchObject({ code: 'payload_too_large', message: 'The bundle holds more than 10000 files (the limit of its file count).' });
    // 10,000 files in all: stored, unpacked by the engine's runner, and run.
    await deployProject(tenant.api, {
      environment: 'many-files',
      storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'many-files')}`,
      executor: 'local',
      bindings: { warehouse: {} },
      files: { ...filler(9_999), 'assets/fine.js': "export default async (ctx) => { await ctx.emit([{ files: 'many' }]); };" },
      manifest: { version: 1, assets: [{ key: 'fine', binding: 'warehouse', entry: 'assets/fine.js', deps: [], schema: { columns: [{ name: 'files', type: 'string' }] } }], jobs: [], schedules: [] },
    });
    const started = await tenant.api.post('/environments/many-files/runs', { assets: ['fine'] });
    expect(started.status).toBe(201);
    const finished = await until(() => tenant.api.get(`/runs/${started.body.data.id}`), (r) => ['succeeded', 'failed', 'canceled'].includes(r.body.data.status), 120_000, 200);
    expect(finished.body.data.status, JSON.stringify(finished.body.data.attempts[0]?.error)).toBe('succeeded');
  }, 180_000);

  it('refuses an upload over 64 MiB with 413 before reading it, and one streamed without a length that is no archive with 422 at once', async () => {
    const huge = Buffer.alloc(64 * 1024 * 1024 + 1, 7);
    const declared = await tenant.api.request('POST', '/bundles', { raw: huge, headers: gzip }).catch((error: Error) => error);
    // Answered from the declared length alone; the client may still be writing when the connection closes.
    if (declared instanceof Error) expect(String(declared.cause ?? declared.message)).toMatch(/EPIPE|ECONNRESET|closed|other side/i);
    else {
      expect(declared.status).toBe(413);
      expect(declared.body.error.code).toBe('payload_too_large');
    }
    // Without a length the bytes are streamed through; what is not a tar.gz stops at its first chunks.
    const chunk = Buffer.alloc(1024 * 1024, 7);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 70) controller.close();
        else {
          sent += 1;
          controller.enqueue(chunk);
        }
      },
    });
    const response = await fetch(`${stack.gatewayUrl}/api/v1/bundles`, {
      method: 'POST',
      headers: { ...gzip, authorization: `Bearer ${tenant.token}` },
      body: stream,
      duplex: 'half',
    } as RequestInit).catch((error: Error) => error);
    // The answer closes the connection; the client may see it, or the closed connection.
    if (response instanceof Error) expect(String(response.cause ?? response.message)).toMatch(/EPIPE|ECONNRESET|closed|other side/i);
    else expect(response.status).toBe(422);
    // Refused at its first chunks: the client was not made to send the whole body.
    expect(sent).toBeLessThan(70);
  });

  it('keeps nothing of an upload its client cut off halfway, and goes on taking uploads', async () => {
    // A readable tar.gz for as far as it is sent: a file header, then 8 MiB of incompressible bytes.
    const archive = gzipSync(Buffer.concat([tarHeader('noise.bin', 8 * 1024 * 1024), randomBytes(8 * 1024 * 1024)]), { level: 1 });
    const stored = await settledBundleFiles();
    expect(stored.loose).toBe(0);
    const upload = httpRequest(`${stack.gatewayUrl}/api/v1/bundles`, {
      method: 'POST',
      headers: { ...gzip, authorization: `Bearer ${tenant.token}`, 'content-length': String(archive.length) },
    });
    const settled = new Promise<void>((resolve) => {
      upload.on('error', () => resolve());
      upload.on('close', () => resolve());
    });
    upload.write(archive.subarray(0, 3 * 1024 * 1024));
    // The service has begun storing it before the client goes.
    const storing = await until(storedBundleFiles, (now) => now.large > 0, 30_000, 100);
    expect(storing.large).toBeGreaterThan(0);
    upload.destroy();
    await settled;
    // What it stored of the upload goes: no GridFS file or chunk of it stays behind.
    expect(await settledBundleFiles()).toEqual(stored);
    expect((await tenant.api.request('POST', '/bundles', { raw: await makeBundle({ 'assets/after-cut.js': 'export default () => {}' }), headers: gzip })).status).toBe(201);
  });
});

// Object storage: a 100,000-row ctx.emit to s3:// on the engine's own store (SeaweedFS),
// against the same work done bare in the bench process: the same rows encoded with
// hyparquet-writer and sent in a single PUT with the same client, to the same server.
import { randomBytes } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { newId } from '@envengine/resource-ids';
import { Run, RunLogLine } from '@envengine/contracts';
import { ApiClient, deployProject, manifestOf, recordMaterialization, stackInfoOf } from '@envengine/test-harness';
import { median, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';
import { EMIT_ROWS, encodeWideRows, loadMakeRows, ROWS_MODULE, WIDE_ASSET, WIDE_COLUMNS } from './wide-rows.ts';

const ENVIRONMENT = 's3-bench';
const REPEATS = 3;
const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : Number.NaN);

export async function objectStorageSuite(_bench: Bench, { stack, dataDir, token, tenantId }: SuiteContext): Promise<string[]> {
  const store = stackInfoOf(stack, dataDir).objectStore;
  if (!store) throw new Error('the object-storage suite needs the stack\'s object store (SeaweedFS, or S3_URL)');
  const api = new ApiClient(`${stack.services.gatewayUrl}/api/v1`, token);
  await deployProject(api, {
    environment: ENVIRONMENT,
    storagePrefix: `s3://${store.bucket}/bench`,
    executor: 'local',
    // No endpoint: the engine's store, with the keys it issues this tenant.
    bindings: { warehouse: {} },
    files: {
      'assets/rows.js': ROWS_MODULE,
      'assets/wide.js': WIDE_ASSET,
    },
    manifest: { ...manifestOf([{ key: 'wide', columns: WIDE_COLUMNS }]), schedules: [] },
  });

  const emitMs: number[] = [];
  let storedBytes = 0;
  // One run first to warm the runner, the bundle cache and the tenant's store keys.
  for (let i = 0; i <= REPEATS; i += 1) {
    const created = await api.post(`/environments/${ENVIRONMENT}/runs`, { assets: ['wide'] });
    if (created.status !== 201) throw new Error(`creating a run answered ${created.status}`);
    let run = Run.parse(created.body.data);
    while (!['succeeded', 'failed', 'canceled'].includes(run.status)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      run = Run.parse((await api.get(`/runs/${run.id}`)).body.data);
    }
    if (run.status !== 'succeeded') throw new Error(`the ${EMIT_ROWS}-row run ended ${run.status}: ${run.attempts.at(-1)?.error}`);
    const lines = ((await api.get(`/runs/${run.id}/logs`)).body.data as unknown[]).map((line) => RunLogLine.parse(line));
    const at = (message: string) => ms(lines.find((line) => line.message === message)?.at);
    if (i > 0) emitMs.push(at('emit done') - at('emit start'));
    const assets = (await api.get(`/environments/${ENVIRONMENT}/assets`)).body.data as Array<{ key: string; latest_materialization: { bytes: number } | null }>;
    storedBytes = assets.find((asset) => asset.key === 'wide')?.latest_materialization?.bytes ?? 0;
  }

  // The bare side: the same client library and settings as the engine's S3 driver, the administrator's keys.
  const client = adminClient(store);
  const makeRows = await loadMakeRows();
  const bareMs: number[] = [];
  const putMs: number[] = [];
  let bareBytes = 0;
  try {
    for (let i = 0; i <= REPEATS; i += 1) {
      const rows = makeRows(EMIT_ROWS);
      const started = performance.now();
      const body = encodeWideRows(rows);
      const encoded = performance.now();
      await client.send(new PutObjectCommand({ Bucket: store.bucket, Key: `bench-bare/${i}.parquet`, Body: body }));
      const done = performance.now();
      bareBytes = body.byteLength;
      if (i > 0) {
        bareMs.push(done - started);
        putMs.push(done - encoded);
      }
    }
  } finally {
    client.destroy();
  }

  const download = await downloadThroughput(api, { stack, dataDir, tenantId }, store);

  const rate = (millis: number) => EMIT_ROWS / (millis / 1000);
  const ratio = rate(median(emitMs)) / rate(median(bareMs));
  console.error(`  s3 emit: ${median(emitMs)} ms; bare encode + PUT ${median(bareMs).toFixed(0)} ms (PUT alone ${median(putMs).toFixed(0)} ms)`);
  return [
    `**Object storage** (\`s3://\` on the engine's SeaweedFS, ${EMIT_ROWS.toLocaleString('en')} rows, 5 columns; median of ${REPEATS} after one warm-up each):`,
    '',
    '| | median ms | rows/s | ratio |',
    '|---|---:|---:|---:|',
    `| bare, in the bench process: hyparquet-writer encode, then one PutObject of the ${(bareBytes / 1024).toFixed(0)} KiB with @aws-sdk/client-s3 | ${median(bareMs).toFixed(0)} | ${rate(median(bareMs)).toFixed(0)} | — |`,
    `| of which the PutObject alone | ${median(putMs).toFixed(0)} | — | — |`,
    `| ctx.emit in a run on the engine's runner (sandboxed), "emit start" → "emit done" (${(storedBytes / 1024).toFixed(0)} KiB stored) | ${median(emitMs).toFixed(0)} | ${rate(median(emitMs)).toFixed(0)} | ${ratio.toFixed(2)}x (target ≥ 0.5x: ${ratio >= 0.5 ? 'met' : 'missed'}) |`,
    '',
    "The emit includes the schema check and the encode in the sandboxed child, the file's trip to the worker, the upload through the tenant's issued keys, reading the object back and comparing it, and recording the materialization.",
    '',
    ...download,
  ];
}

/** The store's administrator, with the same client library and settings as the engine's S3 driver. */
function adminClient(store: { url: string; accessKeyId: string; secretAccessKey: string }): S3Client {
  return new S3Client({
    endpoint: store.url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

const DOWNLOAD_BYTES = 100 * 1024 * 1024;

/**
 * `GET …/materializations/:id/data` of a 100 MiB object through the gateway (the
 * placement-service streams it from the store), against a GetObject of the same object
 * straight from the store in the same run. The object is stored and recorded as a run
 * would leave it (under the tenant's key prefix); its bytes need not be Parquet to be downloaded.
 */
async function downloadThroughput(
  api: ApiClient,
  { stack, dataDir, tenantId }: Pick<SuiteContext, 'stack' | 'dataDir' | 'tenantId'>,
  store: { url: string; bucket: string; accessKeyId: string; secretAccessKey: string },
): Promise<string[]> {
  const environment = (await api.get(`/environments/${ENVIRONMENT}`)).body.data as { id: string };
  const id = newId('mat');
  const location = `s3://${store.bucket}/bench/wide/${id}.parquet`;
  const key = `${tenantId}/bench/wide/${id}.parquet`;
  const client = adminClient(store);
  const gatewayMs: number[] = [];
  const directMs: number[] = [];
  try {
    const body = randomBytes(DOWNLOAD_BYTES);
    await new Upload({ client, params: { Bucket: store.bucket, Key: key, Body: body }, partSize: 8 * 1024 * 1024 }).done();
    await recordMaterialization(stackInfoOf(stack, dataDir), tenantId, {
      id,
      environment_id: environment.id,
      asset_key: 'wide',
      columns: [],
      row_count: 0,
      location,
      bytes: DOWNLOAD_BYTES,
    });
    const url = `${api.baseUrl}/environments/${ENVIRONMENT}/assets/wide/materializations/${id}/data`;
    // Alternating, one warm-up each, so that both see the same machine.
    for (let i = 0; i <= REPEATS; i += 1) {
      const viaGateway = await timed(async () => {
        const response = await fetch(url, { headers: { authorization: `Bearer ${api.token}` } });
        if (response.status !== 200) throw new Error(`the download answered ${response.status}`);
        return countBytes(response.body!);
      });
      const direct = await timed(async () => {
        const answer = await client.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }));
        return countBytes(answer.Body as AsyncIterable<Uint8Array>);
      });
      if (viaGateway.bytes !== DOWNLOAD_BYTES || direct.bytes !== DOWNLOAD_BYTES) throw new Error(`downloaded ${viaGateway.bytes} and ${direct.bytes} bytes, not ${DOWNLOAD_BYTES}`);
      if (i > 0) {
        gatewayMs.push(viaGateway.ms);
        directMs.push(direct.ms);
      }
    }
  } finally {
    client.destroy();
  }
  const mibPerSecond = (millis: number) => DOWNLOAD_BYTES / 1024 / 1024 / (millis / 1000);
  const ratio = mibPerSecond(median(gatewayMs)) / mibPerSecond(median(directMs));
  console.error(`  download: gateway ${median(gatewayMs).toFixed(0)} ms, direct ${median(directMs).toFixed(0)} ms`);
  return [
    `**Downloading a materialization** (100 MiB, median of ${REPEATS} after one warm-up, alternating):`,
    '',
    '| | median ms | MiB/s | ratio |',
    '|---|---:|---:|---:|',
    `| GetObject straight from the store, administrator's keys, in the bench process | ${median(directMs).toFixed(0)} | ${mibPerSecond(median(directMs)).toFixed(0)} | — |`,
    `| \`GET …/materializations/:id/data\` through the gateway (placement-service streaming from the store) | ${median(gatewayMs).toFixed(0)} | ${mibPerSecond(median(gatewayMs)).toFixed(0)} | ${ratio.toFixed(2)}x (target ≥ 0.5x: ${ratio >= 0.5 ? 'met' : 'missed'}) |`,
  ];
}

async function timed(read: () => Promise<number>): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const bytes = await read();
  return { ms: performance.now() - started, bytes };
}

async function countBytes(body: AsyncIterable<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.byteLength;
  return bytes;
}

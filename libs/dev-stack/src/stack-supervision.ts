import mongoose from 'mongoose';
import { canConnect, type BackingServer } from '@envengine/backing-servers';
import { replicaName } from './service-processes.ts';
import type { ServiceName } from './services.ts';
import type { RunningStack } from './stack.ts';
import { Supervisor, type SupervisedProcess, type SupervisorOptions } from './supervisor.ts';

async function answersReadyz(url: string): Promise<boolean> {
  const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
  await response.body?.cancel();
  return response.status === 200;
}

/** Primary again: a restarted one-member replica set takes a few seconds to elect itself. */
async function mongoIsPrimary(url: string): Promise<boolean> {
  const { host } = new URL(url);
  const client = new mongoose.mongo.MongoClient(`mongodb://${host}/?directConnection=true`, {
    serverSelectionTimeoutMS: 1000,
    connectTimeoutMS: 1000,
  });
  try {
    await client.connect();
    return (await client.db('admin').command({ hello: 1 })).isWritablePrimary === true;
  } finally {
    await client.close().catch(() => undefined);
  }
}

function acceptsConnections(address: string): Promise<boolean> {
  const { hostname, port } = new URL(address.includes('://') ? address : `tcp://${address}`);
  return canConnect(hostname, Number(port), 1000);
}

function serverTarget(server: BackingServer, process_: NonNullable<BackingServer['process']>): SupervisedProcess {
  return {
    process: process_,
    ready: () => (server.name === 'mongodb' ? mongoIsPrimary(server.url) : acceptsConnections(server.url)),
  };
}

/**
 * Every process of a running stack by name, each with how to tell it serves again: each
 * service replica (its `/readyz` answers 200) and each embedded backing server (none given
 * by URL; it accepts connections, and a one-member MongoDB is primary again). What the
 * supervisor keeps running, and what a fault injector may kill.
 */
export function stackProcesses(stack: RunningStack): Map<string, SupervisedProcess> {
  const { services, servers } = stack;
  const processes = new Map<string, SupervisedProcess>();
  for (const name of Object.keys(services.replicas) as ServiceName[]) {
    services.replicas[name].forEach((_, replica) => processes.set(replicaName(name, replica), serviceTarget(stack, name, replica)));
  }
  for (const server of [servers.mongo, servers.redis, servers.temporal, servers.s3]) {
    if (server === servers.mongo && servers.mongo.members && servers.mongo.members.length > 1) {
      // A member of a set of several rejoins as a secondary: it is back once it accepts connections.
      servers.mongo.members.forEach((member, index) =>
        processes.set(`mongodb-${index}`, { process: member.process, ready: () => acceptsConnections(member.host) }),
      );
    } else if (server === servers.redis && 'nodes' in servers.redis) {
      // A Redis Cluster's node rejoins (a master that was replaced comes back as a replica).
      for (const node of servers.redis.nodes) processes.set(node.name, { process: node.process, ready: () => acceptsConnections(node.address) });
    } else if (server === servers.temporal && 'parts' in servers.temporal) {
      // The Temporal cluster: each process (PostgreSQL, each service, the UI) on its own.
      for (const part of servers.temporal.parts) processes.set(part.name, { process: part.process, ready: () => acceptsConnections(part.address) });
    } else if (server?.process) processes.set(server.name, serverTarget(server, server.process));
  }
  // The object store's IAM gateway, beside its S3 gateway.
  if (servers.s3?.iamProcess) processes.set('s3-iam', { process: servers.s3.iamProcess, ready: () => acceptsConnections(servers.s3!.iamUrl) });
  return processes;
}

function serviceTarget({ services }: RunningStack, name: ServiceName, replica: number): SupervisedProcess {
  return { process: services.replicas[name][replica]!, ready: () => answersReadyz(services.replicaUrls[name][replica]!) };
}

/**
 * Supervises every process of a running stack (what `npm start` does; tests' stacks do not,
 * since they stop and kill processes on purpose), each restarted until it serves again
 * (`stackProcesses`). `stack.services.restart()` keeps working: the process it starts is
 * supervised in turn. Stop the returned supervisor before stopping the stack.
 */
export function superviseStack(stack: RunningStack, options: SupervisorOptions): Supervisor {
  const supervisor = new Supervisor(options);
  const { services } = stack;
  for (const [name, target] of stackProcesses(stack)) supervisor.watch(name, target);
  // restart() stops the old process (an intended stop, which ends its supervision) and
  // starts a new one in its place: supervise that one.
  const restart = services.restart;
  services.restart = async (name, env, replica = 0) => {
    await restart(name, env, replica);
    supervisor.watch(replicaName(name, replica), serviceTarget(stack, name, replica));
  };
  // The same for restartAll() (a credentials reload): every new process supervised.
  const restartAll = services.restartAll;
  services.restartAll = async () => {
    await restartAll();
    for (const name of Object.keys(services.replicas) as ServiceName[]) {
      services.replicas[name].forEach((_, replica) => supervisor.watch(replicaName(name, replica), serviceTarget(stack, name, replica)));
    }
  };
  return supervisor;
}

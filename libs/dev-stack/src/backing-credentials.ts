import type { MongoAuth, RedisAcl, RedisUser } from '@envengine/backing-servers';
import { localRunnerAclRules } from '@envengine/attempt-queues';
import { REDIS_CLUSTER_CLIENT_COMMANDS } from '@envengine/redis-connections';
import { RATE_LIMIT_KEY_PREFIX, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { ENVIRONMENT_RETIRED_CHANNEL } from '@envengine/contracts';
import type { Credentials } from './credentials.ts';
import { SERVICE_DATABASES } from './services.ts';

/** The administrator of each server: the stack tool, the admin command and tests only. */
export const ADMIN_USERNAME = 'envengine-admin';

/** The MongoDB user of each scope; the workflow-worker is the deployment scope's and uses its user. */
export const MONGO_SCOPE_USERS = {
  gateway: { username: 'gateway', password: 'MONGO_GATEWAY_PASSWORD' },
  'placement-service': { username: 'placement', password: 'MONGO_PLACEMENT_PASSWORD' },
  'deployment-service': { username: 'deployment', password: 'MONGO_DEPLOYMENT_PASSWORD' },
  'secrets-service': { username: 'secrets', password: 'MONGO_SECRETS_PASSWORD' },
} as const satisfies Record<keyof typeof SERVICE_DATABASES, { username: string; password: keyof Credentials['mongodb'] }>;

/**
 * MongoDB's users: each scope with `readWrite` on its own database (named with the stack's
 * prefix, so that test stacks on one server each have users of their own).
 */
export function mongoAuth(credentials: Credentials['mongodb'], databases: Record<keyof typeof SERVICE_DATABASES, string>, userPrefix = ''): MongoAuth {
  return {
    replicaSetKey: credentials.MONGO_REPLICA_SET_KEY,
    admin: { username: ADMIN_USERNAME, password: credentials.MONGO_ADMIN_PASSWORD },
    users: (Object.keys(MONGO_SCOPE_USERS) as Array<keyof typeof MONGO_SCOPE_USERS>).map((scope) => ({
      username: `${userPrefix}${MONGO_SCOPE_USERS[scope].username}`,
      password: credentials[MONGO_SCOPE_USERS[scope].password],
      db: databases[scope],
    })),
  };
}

/**
 * Redis's users, one per engine service that connects (`default` is off):
 * - gateway: subscribes to token revocations, and runs the rate-limit script on the
 *   rate-limit buckets (`envengine:rate:*`, the only keys it may touch, in a script too);
 * - placement: the engine's queues (`envengine:*`), publishing revocations, and managing
 *   pool users (`ACL SETUSER/DELUSER/USERS`) and loading the worker scripts; no
 *   `@dangerous` command otherwise (FLUSHALL, CONFIG, KEYS, DEBUG, …); `ACL SAVE` keeps pool
 *   users in each server's ACL file across its restarts;
 * - runner: the `local` queue as a BullMQ Worker (attempt-worker --local).
 * Each also gets what a Redis Cluster client sends to learn the layout.
 * The admin (`~* &* +@all`) is added by the server itself.
 */
export function redisEngineUsers(credentials: Credentials['redis']): RedisUser[] {
  return [
    {
      username: 'gateway',
      password: credentials.REDIS_GATEWAY_PASSWORD,
      rules: [
        'resetkeys', 'resetchannels', `~${RATE_LIMIT_KEY_PREFIX}*`, `&${TOKEN_REVOKED_CHANNEL}`,
        // Publish: a revocation made through the API reaches the other gateways.
        '-@all', '+subscribe', '+unsubscribe', '+publish', '+ping', '+info', '+client|setname', ...REDIS_CLUSTER_CLIENT_COMMANDS.map((command) => `+${command}`),
        // The rate-limit script and what it calls (a script gets no command its user lacks).
        '+evalsha', '+eval', '+time', '+hmget', '+hset', '+pexpire',
      ],
    },
    {
      username: 'placement',
      password: credentials.REDIS_PLACEMENT_PASSWORD,
      rules: [
        'resetkeys', 'resetchannels', '~envengine:*', `&${TOKEN_REVOKED_CHANNEL}`, `&${ENVIRONMENT_RETIRED_CHANNEL}`,
        '+@all', '-@dangerous', '+info', '+acl|setuser', '+acl|deluser', '+acl|users', '+acl|save', '-script', '+script|load', '-keys', '-flushall', '-flushdb',
        ...REDIS_CLUSTER_CLIENT_COMMANDS.map((command) => `+${command}`),
        // Pool users go on every node a cluster lists, replicas its client has not met included.
        '+cluster|nodes',
      ],
    },
    { username: 'runner', password: credentials.REDIS_RUNNER_PASSWORD, rules: ['resetkeys', ...localRunnerAclRules()] },
  ];
}

/** The Redis user of each service that connects to Redis. */
export const REDIS_USER_OF_SERVICE = { gateway: 'gateway', 'placement-service': 'placement', 'attempt-worker': 'runner' } as const;

export function redisAcl(credentials: Credentials['redis']): RedisAcl {
  return { admin: { username: ADMIN_USERNAME, password: credentials.REDIS_ADMIN_PASSWORD }, users: redisEngineUsers(credentials) };
}

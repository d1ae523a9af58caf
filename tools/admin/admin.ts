// `npm run admin -- token create --tenant acme`: manages API tokens in the gateway's store,
// tenants' quota limits, and the secrets-service's master key (`master-key new`, `master-key rewrap`).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connectRedis } from '@envengine/redis-connections';
import { OPERATOR_CAUSE, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { redisAclFile } from '@envengine/backing-servers';
import {
  ROTATABLE_CREDENTIAL_FILES,
  credentialsDir,
  loadOrCreateCredentials,
  redisAcl,
  issueToken,
  localAdminUrls,
  localServerUrls,
  parseQuotaAssignments,
  quotaDatabases,
  rotateCredentials,
  setTenantQuotas,
  SERVICE_DATABASES,
  signalRunningStack,
  withTokenStore,
} from '@envengine/dev-stack';
import { DEFAULT_QUOTA_LIMITS } from '@envengine/contracts';
import { printNewMasterKey, rewrapDataKeys } from './master-key.ts';

const USAGE = `usage:
  npm run admin -- token create --tenant <name> [--label <text>]   (an admin token: every scope; the tenant makes the rest with POST /api/v1/tokens)
  npm run admin -- token revoke <token id>
  npm run admin -- token list
  npm run admin -- quota show --tenant <name>
  npm run admin -- quota set --tenant <name> <quota>=<count>|default ...
  npm run admin -- master-key new
  npm run admin -- master-key rewrap
  npm run admin -- credentials init
  npm run admin -- credentials rotate <mongodb|redis|internal>

Connects to MONGO_URL and, to tell running gateways about a revocation at once, REDIS_URL;
by default to the servers of the local stack (npm start) as their administrator, with the
credentials in its data directory (ENVENGINE_DATA_DIR, default .envengine/credentials/).

token create and token revoke record the tenant's token.created and token.revoked events
(actor operator; a revoke of a token revoked before records nothing), which a running
gateway publishes to the audit log (GET /api/v1/events) within a second.

credentials init makes the credentials files if missing (npm start does too) and Redis's
ACL file for docker-compose.yml (redis-users.acl, hashes only); see .env.example.
credentials rotate sets new passwords on the running local stack's server (or a new
internal credential), writes them to the credentials file, and has the running stack
restart its services with them. See docs/operations.md (Credentials).

quota set changes a tenant's quota limits (queued_runs, queued_runs_per_environment,
environments, bundle_bytes, materialization_bytes, secrets_per_environment, webhooks); default puts one back to the
engine's default. Every service replica applies it at its next admission. The tenant
sees its limits and use at GET /api/v1/quotas.

master-key rewrap re-wraps every data key of the local secret backend under
SECRETS_MASTER_KEY, opening them with SECRETS_PREVIOUS_MASTER_KEYS (comma-separated),
in the database SECRETS_MONGO_DB (default envengine_secrets).
See docs/api.md (Secrets and bindings) for the rotation steps.`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { tenant: { type: 'string' }, label: { type: 'string' }, help: { type: 'boolean' } },
});
const [noun, verb, argument] = positionals;
if (values.help || (noun !== 'token' && noun !== 'master-key' && noun !== 'credentials' && noun !== 'quota') || !verb) {
  console.log(USAGE);
  process.exit(values.help ? 0 : 2);
}

const local = localAdminUrls();

if (noun === 'credentials' && verb === 'init') {
  const credentials = loadOrCreateCredentials(local.dataDir);
  const aclFile = join(credentialsDir(local.dataDir), 'redis-users.acl');
  writeFileSync(aclFile, redisAclFile(redisAcl(credentials.redis)), { mode: 0o600 });
  console.log(`credentials in ${credentialsDir(local.dataDir)} (mongodb.env, redis.env, internal.env, s3.env, redis-users.acl)`);
  process.exit();
}

if (noun === 'credentials') {
  if (verb !== 'rotate' || !(ROTATABLE_CREDENTIAL_FILES as readonly string[]).includes(argument ?? '')) {
    console.log(USAGE);
    process.exit(2);
  }
  const report = (line: string) => console.log(line);
  await rotateCredentials(
    {
      dataDir: local.dataDir,
      ...localServerUrls(local.dataDir),
      report,
    },
    argument as (typeof ROTATABLE_CREDENTIAL_FILES)[number],
  );
  signalRunningStack(local.dataDir, report);
  process.exit();
}

if (noun === 'master-key') {
  if (verb === 'new') printNewMasterKey();
  else if (verb === 'rewrap') await rewrapDataKeys({ MONGO_URL: local.mongoUrl, ...process.env });
  else {
    console.log(USAGE);
    process.exitCode = 2;
  }
  process.exit();
}

const { mongoUrl, redisUrl } = local;
const dbName = process.env.GATEWAY_MONGO_DB ?? SERVICE_DATABASES.gateway;

if (noun === 'quota') {
  if ((verb !== 'show' && verb !== 'set') || !values.tenant) {
    console.log(USAGE);
    process.exit(2);
  }
  const tenant = await withTokenStore(mongoUrl, dbName, (tokens) => tokens.findTenant(values.tenant!));
  if (!tenant) {
    console.error(`no tenant named ${values.tenant} (a tenant is made with its first token: token create --tenant ${values.tenant})`);
    process.exit(1);
  }
  let overrides;
  try {
    overrides = verb === 'set' ? parseQuotaAssignments(positionals.slice(2)) : {};
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  if (verb === 'set' && Object.keys(overrides).length === 0) {
    console.error('name at least one <quota>=<count>|default');
    process.exit(2);
  }
  const limits = await setTenantQuotas(mongoUrl, quotaDatabases(), tenant.id, overrides);
  console.log(`quota limits of ${tenant.name} (${tenant.id}):`);
  for (const [name, limit] of Object.entries(limits)) console.log(`  ${name.padEnd(28)} ${limit}${limit === DEFAULT_QUOTA_LIMITS[name as keyof typeof limits] ? ' (default)' : ''}`);
  process.exit();
}

await withTokenStore(mongoUrl, dbName, async (tokens) => {
  switch (verb) {
    case 'create': {
      if (!values.tenant) throw new Error('--tenant is required');
      // Recorded as the operator's token.created; the running gateway's relay publishes it.
      const { tenant, token } = await issueToken(tokens, values.tenant, values.label ?? 'admin', OPERATOR_CAUSE);
      console.log(`token id: ${token.id}\ntenant:   ${tenant.name} (${tenant.id})\ntoken:    ${token.token}\n\nThe token is shown once; only its hash is stored.`);
      return;
    }
    case 'revoke': {
      if (!argument) throw new Error('give the token id (tok_...) to revoke');
      const revoked = await tokens.revoke(argument, OPERATOR_CAUSE);
      if (!revoked) throw new Error(`no token with id ${argument}`);
      // Told again even when it was revoked before (nothing recorded then): a gateway that missed it drops it now.
      const already = revoked.revoked ? '' : ` (already revoked at ${revoked.record.revoked_at})`;
      const redis = connectRedis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 3000 });
      try {
        const gateways = await redis.publish(TOKEN_REVOKED_CHANNEL, revoked.tokenHash);
        console.log(`revoked ${argument}${already}; ${gateways} running gateway(s) told`);
      } catch (error) {
        console.log(`revoked ${argument}${already}; Redis unreachable (${(error as Error).message}), gateways drop it within their cache TTL`);
      } finally {
        redis.disconnect();
      }
      return;
    }
    case 'list': {
      for (const token of await tokens.list()) {
        const { role, scopes, environments, expires_at: expiresAt } = token.grant;
        const grant = `scopes=${role ?? scopes.join(',')}  environments=${environments?.join(',') ?? 'all'}${expiresAt ? `  expires=${expiresAt}` : ''}`;
        console.log(`${token.id}  tenant=${token.tenant_name}  label=${token.label}  ${grant}  created=${token.created_at}  ${token.revoked_at ? `revoked=${token.revoked_at}` : 'active'}`);
      }
      return;
    }
    default:
      console.log(USAGE);
      process.exitCode = 2;
  }
});

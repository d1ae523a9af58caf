import { randomBytes } from 'node:crypto';
import { connectRedis } from '@envengine/redis-connections';
import { OPERATOR_CAUSE, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { issueToken, withTokenStore } from '@envengine/dev-stack';
import { PUBLIC_API_BASE } from '@envengine/contracts';
import { ApiClient } from './api-client.ts';
import type { StackInfo } from './test-stack.ts';

export interface TestTenant {
  tenantId: string;
  tenantName: string;
  tokenId: string;
  token: string;
  /** Client for `/api/v1` that sends this tenant's token. */
  api: ApiClient;
}

/** A fresh tenant with its own token, so that tests never see each other's resources. */
export async function createTenant(stack: StackInfo, prefix = 'tenant'): Promise<TestTenant> {
  const name = `${prefix}-${randomBytes(5).toString('hex')}`;
  const { tenant, token } = await withTokenStore(stack.mongoUrl, stack.databases.gateway, (tokens) =>
    issueToken(tokens, name, 'test'),
  );
  return {
    tenantId: tenant.id,
    tenantName: tenant.name,
    tokenId: token.id,
    token: token.token,
    api: new ApiClient(`${stack.gatewayUrl}${PUBLIC_API_BASE}`, token.token),
  };
}

/**
 * A client with another token of the same tenant. Each token has its own rate limit, so a
 * test that reads back everything after each of many calls spreads its reads over a few
 * and stays within the limit however fast the machine answers.
 */
export async function anotherTokenOf(stack: StackInfo, tenant: TestTenant): Promise<ApiClient> {
  const { token } = await withTokenStore(stack.mongoUrl, stack.databases.gateway, (tokens) => issueToken(tokens, tenant.tenantName, 'test'));
  return new ApiClient(`${stack.gatewayUrl}${PUBLIC_API_BASE}`, token.token);
}

/**
 * Revokes a token as the admin command does: in the store (with its `token.revoked` event,
 * actor `operator`, the first time only), then broadcast to gateways.
 */
export async function revokeToken(stack: StackInfo, tokenId: string): Promise<void> {
  const revoked = await withTokenStore(stack.mongoUrl, stack.databases.gateway, (tokens) => tokens.revoke(tokenId, OPERATOR_CAUSE));
  if (!revoked) throw new Error(`no token ${tokenId}`);
  const redis = connectRedis(stack.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    await redis.publish(TOKEN_REVOKED_CHANNEL, revoked.tokenHash);
  } finally {
    redis.disconnect();
  }
}

/** A unique resource name for one test. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

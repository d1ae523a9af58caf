import mongoose from 'mongoose';
import { ApiTokenRepository, type IssuedToken, type Tenant } from '@envengine/api-tokens';

/** Opens the gateway's token store, runs `work`, and closes it again. */
export async function withTokenStore<T>(
  mongoUrl: string,
  dbName: string,
  work: (tokens: ApiTokenRepository) => Promise<T>,
): Promise<T> {
  const connection = mongoose.createConnection(mongoUrl, { dbName, serverSelectionTimeoutMS: 5000 });
  try {
    await connection.asPromise();
    const tokens = new ApiTokenRepository(connection);
    await tokens.ensureIndexes();
    return await work(tokens);
  } finally {
    await connection.close();
  }
}

/** A new token for the named tenant (created if missing). */
export async function issueToken(
  tokens: ApiTokenRepository,
  tenantName: string,
  label: string,
): Promise<{ tenant: Tenant; token: IssuedToken }> {
  const tenant = await tokens.ensureTenant(tenantName);
  return { tenant, token: await tokens.issueToken(tenant.id, label) };
}

import { internalServiceConfigSchema, parseConfig, type InternalServiceConfig } from '@envengine/service-kit';

export function loadPlacementConfig(env: Record<string, string | undefined>): InternalServiceConfig {
  return parseConfig(internalServiceConfigSchema({ port: 8081, mongoDb: 'envengine_placement' }), env);
}

import {
  InternalApi,
  PublicApi,
  RESOLVER_CALLER_HEADER,
  type Binding,
  type BindingModes,
  type ResolveBindingRequest,
  type ResolvedBinding,
  type SecretsQuotas,
  type TeardownStepReport,
} from '@envengine/contracts';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

/** The secrets-service's bindings, as other services read them (names and modes, never values). */
export class SecretsClient {
  private readonly http: InternalHttpClient;

  constructor(options: Omit<InternalHttpClientOptions, 'service'>) {
    this.http = new InternalHttpClient({ ...options, service: 'secrets-service' });
  }

  /** The environment's bindings (the public route, reached directly). */
  listBindings(tenantId: string, environmentName: string, requestId?: string): Promise<Binding[]> {
    return this.http.request(PublicApi.listBindings, { tenantId, requestId, params: { name: environmentName } });
  }

  /** Internal, a tear-down step: the environment's bindings deleted and its secrets retired in their backend. */
  retireEnvironment(tenantId: string, environmentId: string): Promise<TeardownStepReport> {
    return this.http.request(InternalApi.retireEnvironmentSecrets, { tenantId, params: { id: environmentId } });
  }

  /** Internal: the tenant's secrets quota, its limit and use (a part of `GET /quotas`). */
  quotas(tenantId: string, requestId?: string): Promise<SecretsQuotas> {
    return this.http.request(InternalApi.secretsQuotas, { tenantId, requestId });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/**
 * For the attempt runner and remote workers only: a binding's settings with its secrets
 * resolved. Holds the resolver credential, which the gateway never has; every call is
 * audited under `caller`.
 */
export class SecretResolverClient {
  private readonly http: InternalHttpClient;

  constructor(
    options: Omit<InternalHttpClientOptions, 'service'>,
    private readonly caller: string,
  ) {
    this.http = new InternalHttpClient({ ...options, service: 'secrets-service' });
  }

  /** The modes of an environment's bindings (an attempt's plan), by environment id. */
  bindingModes(tenantId: string, environmentId: string, parentId?: string | null): Promise<BindingModes> {
    return this.http.request(InternalApi.bindingModes, {
      tenantId,
      params: { id: environmentId },
      query: parentId ? { parent_id: parentId } : {},
      headers: { [RESOLVER_CALLER_HEADER]: this.caller },
    });
  }

  resolve(tenantId: string, request: ResolveBindingRequest): Promise<ResolvedBinding> {
    return this.http.request(InternalApi.resolveBinding, { tenantId, body: request, headers: { [RESOLVER_CALLER_HEADER]: this.caller } });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

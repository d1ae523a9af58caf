import type { LookupFunction } from 'node:net';
import { EngineNetworkGuard } from '@envengine/egress-rules';

/**
 * The engine's runner talks to a tenant's object store from the engine host, outside the
 * sandbox: an endpoint a binding names must not make it a proxy into the engine's network
 * (its loopback, private ranges, link-local cloud metadata, the host's own addresses).
 * Checked on every address a name resolves to, at connect time, so a name that resolves
 * differently later is caught too. A pool worker runs on its tenant's own hosts: no guard.
 */
export class EndpointGuard {
  private readonly network = new EngineNetworkGuard();

  /** @param allowedOrigins endpoints the operator allows although they are on the engine's network (the engine's own store). */
  constructor(private readonly allowedOrigins: ReadonlySet<string>) {}

  isAllowed(endpoint: string): boolean {
    return this.allowedOrigins.has(new URL(endpoint).origin);
  }

  /** Why the runner does not connect to `address`, or null. */
  refusal(address: string): string | null {
    return this.network.refusal(address);
  }

  /** A `lookup` for the HTTP agents: resolves as usual, then refuses an address on the engine's network. */
  readonly lookup: LookupFunction = this.network.lookup;
}

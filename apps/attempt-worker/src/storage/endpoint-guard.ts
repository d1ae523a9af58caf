import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { hostAddresses, REFUSED_RANGES } from '../sandbox/sandbox-network.ts';

/**
 * The engine's runner talks to a tenant's object store from the engine host, outside the
 * sandbox: an endpoint a binding names must not make it a proxy into the engine's network
 * (its loopback, private ranges, link-local cloud metadata, the host's own addresses).
 * Checked on every address a name resolves to, at connect time, so a name that resolves
 * differently later is caught too. A pool worker runs on its tenant's own hosts: no guard.
 */
export class EndpointGuard {
  private readonly refused = new BlockList();

  /** @param allowedOrigins endpoints the operator allows although they are on the engine's network (the engine's own store). */
  constructor(private readonly allowedOrigins: ReadonlySet<string>) {
    for (const range of [...REFUSED_RANGES, '127.0.0.0/8']) {
      const [network, prefix] = range.split('/');
      this.refused.addSubnet(network!, Number(prefix), 'ipv4');
    }
    for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) this.refused.addSubnet(network, prefix, 'ipv6');
    for (const address of hostAddresses()) this.refused.addAddress(address, 'ipv4');
  }

  isAllowed(endpoint: string): boolean {
    return this.allowedOrigins.has(new URL(endpoint).origin);
  }

  /** Why the runner does not connect to `address`, or null. IPv4-mapped IPv6 addresses are judged as IPv4. */
  refusal(address: string): string | null {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    return this.refused.check(ip, family) ? `${address} is on the engine's own network (loopback, private, link-local or the host itself), where the engine's runner does not connect for a tenant` : null;
  }

  /** A `lookup` for the HTTP agents: resolves as usual, then refuses an address on the engine's network. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as LookupAddress[];
      const problem = list.map((entry) => this.refusal(entry.address)).find((reason) => reason !== null);
      if (problem) return callback(Object.assign(new Error(`${hostname}: ${problem}`), { code: 'EREFUSEDADDRESS' }), '', 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

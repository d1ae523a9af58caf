import { lookup as systemLookup, Resolver, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

/**
 * The engine's own network, where nothing a tenant names is reached from the engine's hosts
 * (docs/design.md#the-network): private ranges, link-local (cloud metadata), CGNAT, benchmark
 * and multicast ranges, besides loopback, every address of the engine host and the subnets of
 * its interfaces (its neighbours there may be the engine's other servers). The sandbox makes
 * the ranges and the host's addresses unreachable by route; the runner's storage client and
 * the webhook sender refuse all of them by address.
 */
export const REFUSED_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/3',
];

const REFUSED_IPV6: ReadonlyArray<readonly [string, number]> = [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]];

/** The host's network interfaces as `node:os` lists them. */
export type HostInterfaces = () => NodeJS.Dict<NetworkInterfaceInfo[]>;

/** The engine host's own IPv4 addresses: refused one by one, as they may be public. */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((address) => address !== undefined && address.family === 'IPv4' && !address.internal)
    .map((address) => address!.address);
}

/**
 * The subnets of the engine host's interfaces other than loopback (IPv4 and IPv6), as
 * `[address, prefix length, family]`: what the interface's `cidr` says (its address and
 * netmask). Refused whole, as they may be public: a host on 192.0.2.2/24 refuses 192.0.2.77.
 */
export function hostSubnets(interfaces: HostInterfaces = networkInterfaces): Array<[string, number, 'ipv4' | 'ipv6']> {
  const subnets: Array<[string, number, 'ipv4' | 'ipv6']> = [];
  for (const address of Object.values(interfaces()).flat()) {
    if (!address || address.internal || !address.cidr) continue;
    const bits = Number(address.cidr.slice(address.cidr.lastIndexOf('/') + 1));
    if (Number.isInteger(bits)) subnets.push([address.address, bits, address.family === 'IPv6' ? 'ipv6' : 'ipv4']);
  }
  return subnets;
}

/** An address (or CIDR range) of an operator's exception list, parsed; throws on a malformed one. */
function addTo(list: BlockList, entry: string): void {
  const [address, prefix] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0) throw new Error(`"${entry}" is not an IP address or a CIDR range`);
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (prefix === undefined) list.addAddress(address!, type);
  else {
    const bits = Number(prefix);
    if (!Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32)) throw new Error(`"${entry}" has no valid prefix length`);
    list.addSubnet(address!, bits, type);
  }
}

export interface EngineNetworkGuardOptions {
  /** Addresses or CIDR ranges the operator allows although they are on the engine's network. */
  allowed?: readonly string[];
  /**
   * DNS servers (`host` or `host:port`) that names are resolved with, instead of the
   * system's resolver (getaddrinfo: /etc/hosts, then its servers).
   */
  dnsServers?: readonly string[];
  /** The host's interfaces, whose addresses and subnets are refused: `node:os`'s by default (tests give others). */
  interfaces?: HostInterfaces;
}

/** A connection refused because its address is on the engine's network. */
export class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
  readonly code = 'EREFUSEDADDRESS';
}

/**
 * Judges the addresses the engine connects to for a tenant. Used as an HTTP agent's
 * `lookup`, it checks every address a name resolves to at connect time and connects to
 * one of those it checked, so a name that resolves differently later (DNS rebinding) is
 * caught too.
 */
export class EngineNetworkGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();
  private readonly resolver: Resolver | undefined;

  constructor(options: EngineNetworkGuardOptions = {}) {
    for (const range of [...REFUSED_RANGES, '127.0.0.0/8']) addTo(this.refused, range);
    for (const [network, prefix] of REFUSED_IPV6) this.refused.addSubnet(network, prefix, 'ipv6');
    for (const address of hostAddresses()) this.refused.addAddress(address, 'ipv4');
    for (const [address, bits, family] of hostSubnets(options.interfaces)) this.refused.addSubnet(address, bits, family);
    for (const entry of options.allowed ?? []) addTo(this.allowed, entry);
    if (options.dnsServers && options.dnsServers.length > 0) {
      this.resolver = new Resolver({ timeout: 3_000, tries: 2 });
      this.resolver.setServers([...options.dnsServers]);
    }
  }

  /** Why the engine does not connect to `address` for a tenant, or null. IPv4-mapped IPv6 addresses are judged as IPv4. */
  refusal(address: string): string | null {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(ip, family)) return null;
    return this.refused.check(ip, family) ? `${address} is on the engine's own network (loopback, private, link-local, or the engine host's addresses and subnets), where the engine does not connect for a tenant` : null;
  }

  /** Every address `hostname` resolves to (an IP literal: itself). */
  async resolve(hostname: string): Promise<LookupAddress[]> {
    const bare = hostname.replace(/^\[(.*)\]$/, '$1');
    const family = isIP(bare);
    if (family !== 0) return [{ address: bare, family }];
    return new Promise((resolve, reject) => this.resolveWith(bare, (error, addresses) => (error ? reject(error) : resolve(addresses))));
  }

  /** The first refusal among the addresses `hostname` resolves to, or null. */
  async refusalOfHost(hostname: string): Promise<string | null> {
    const addresses = await this.resolve(hostname);
    return addresses.map((entry) => this.refusal(entry.address)).find((reason) => reason !== null) ?? null;
  }

  /** A `lookup` for HTTP agents: resolves, then refuses a name any of whose addresses is on the engine's network. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolveWith(hostname, (error, list) => {
      if (error) return callback(error, '', 0);
      const wanted = options.family === 4 || options.family === 6 ? list.filter((entry) => entry.family === options.family) : list;
      const problem = list.map((entry) => this.refusal(entry.address)).find((reason) => reason !== null);
      if (problem) return callback(new RefusedAddressError(`${hostname}: ${problem}`), '', 0);
      if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no address of family ${options.family}`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, wanted);
      return callback(null, wanted[0]!.address, wanted[0]!.family);
    });
  };

  private resolveWith(hostname: string, done: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void {
    if (!this.resolver) {
      systemLookup(hostname, { all: true }, (error, addresses) => done(error, (addresses ?? []) as LookupAddress[]));
      return;
    }
    const resolver = this.resolver;
    // Both families, as getaddrinfo would; a name with neither is ENOTFOUND.
    void Promise.allSettled([
      new Promise<string[]>((resolve, reject) => resolver.resolve4(hostname, (error, found) => (error ? reject(error) : resolve(found)))),
      new Promise<string[]>((resolve, reject) => resolver.resolve6(hostname, (error, found) => (error ? reject(error) : resolve(found)))),
    ]).then(([v4, v6]) => {
      const addresses: LookupAddress[] = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (addresses.length > 0) return done(null, addresses);
      const failure = (v4.status === 'rejected' ? v4.reason : (v6 as PromiseRejectedResult).reason) as NodeJS.ErrnoException;
      done(failure, []);
    });
  }
}

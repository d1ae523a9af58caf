import { Pool, type Dispatcher } from 'undici';

/** Why a request to one replica failed, as far as deciding to send it to another goes. */
function failureOf(error: unknown): 'refused' | 'reset' | 'other' {
  const code = (error as { code?: unknown } | undefined)?.code;
  // Nothing reached the replica: its port is closed (stopped, restarting, not yet up).
  if (code === 'ECONNREFUSED') return 'refused';
  // A kept-alive socket the replica closed just as it was reused: the request may have reached it.
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'reset';
  return 'other';
}

export interface ReplicaRequest extends Omit<Dispatcher.RequestOptions, 'origin'> {
  /**
   * Whether sending the request twice does no harm (GET, HEAD): then a reset socket, which
   * may have carried it to a replica, is sent again on the next one too.
   */
  idempotent: boolean;
}

/**
 * Keep-alive connection pools to the replicas of one service, taken in turn. A replica
 * that refuses the connection never saw the request, so the request goes to the next
 * replica (each tried once; a lone replica twice), whatever its method, unless its body
 * is a stream already being read. An idempotent request also moves on after a reset socket.
 */
export class ReplicaPools {
  private readonly pools: Pool[];
  private next = 0;

  constructor(origins: readonly string[], options: Pool.Options) {
    if (origins.length === 0) throw new Error('ReplicaPools needs at least one origin');
    this.pools = origins.map((origin) => new Pool(origin, options));
  }

  get size(): number {
    return this.pools.length;
  }

  async request(request: ReplicaRequest): Promise<Dispatcher.ResponseData> {
    const { idempotent, ...options } = request;
    const streamed = options.body !== undefined && options.body !== null && typeof options.body === 'object' && 'pipe' in options.body;
    const first = this.next;
    this.next = (this.next + 1) % this.pools.length;
    // One more try than there are replicas: a single replica still gets a second try
    // after a reset socket (the usual case when it restarts under a kept-alive socket).
    const tries = this.pools.length === 1 ? 2 : this.pools.length;
    for (let attempt = 0; ; attempt++) {
      const pool = this.pools[(first + attempt) % this.pools.length]!;
      try {
        return await pool.request(options);
      } catch (error) {
        const failure = failureOf(error);
        const again = !streamed && attempt + 1 < tries && (failure === 'refused' || (failure === 'reset' && idempotent));
        if (!again) throw error;
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((pool) => pool.close()));
  }
}

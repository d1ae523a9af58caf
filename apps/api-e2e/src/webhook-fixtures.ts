import { createSocket, type Socket } from 'node:dgram';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The shared stack's webhook settings: receivers on 127.0.0.1 (which the egress rule
 * refuses otherwise, as it does every other loopback address), and a retry schedule of
 * seconds: waits of 100, 400, 750, 750 and 750 ms, six tries, then the webhook is disabled.
 */
export const WEBHOOK_TEST_SETTINGS = {
  WEBHOOK_TARGETS_ALLOWED: '127.0.0.1',
  WEBHOOK_RETRY_FIRST_DELAY_MS: '100',
  WEBHOOK_RETRY_WINDOW_MS: '3000',
  WEBHOOK_TIMEOUT_MS: '3000',
};
/** Tries of one delivery under WEBHOOK_TEST_SETTINGS. */
export const TEST_TRIES = 6;

export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  status: number;
}

/**
 * A webhook receiver on 127.0.0.1 that keeps every request, per path, and answers each
 * path's requests as `answer` says (200 by default).
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  private answers = new Map<string, (count: number) => number>();
  private delays = new Map<string, number>();
  private waiters: Array<() => void> = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        const count = receiver.received.filter((delivery) => delivery.path === path).length;
        const status = receiver.answers.get(path)?.(count) ?? 200;
        receiver.received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), status });
        for (const wake of receiver.waiters.splice(0)) wake();
        const answer = () => response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'not now');
        const delay = receiver.delays.get(path);
        if (delay === undefined) answer();
        else setTimeout(answer, delay);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** How the requests to `path` are answered: by their number there, from 0. */
  answer(path: string, status: (count: number) => number): void {
    this.answers.set(path, status);
  }

  /** Answers each request to `path` only after `ms`: a slow receiver. */
  slow(path: string, ms: number): void {
    this.delays.set(path, ms);
  }

  at(path: string): ReceivedDelivery[] {
    return this.received.filter((delivery) => delivery.path === path);
  }

  /** Waits until the requests to `path` satisfy `done` (each request wakes it), or fails after `timeoutMs`. */
  async waitFor(path: string, done: (deliveries: ReceivedDelivery[]) => boolean, timeoutMs = 20_000): Promise<ReceivedDelivery[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.at(path))) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the receiver's ${path} got ${this.at(path).length} requests, not what was awaited, within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.at(path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A DNS server on 127.0.0.1 that answers A queries from a table the test changes: what
 * a tenant's own DNS could do between a webhook's create and its delivery.
 */
export class TestDnsServer {
  readonly records = new Map<string, string>();

  private constructor(private readonly socket: Socket) {}

  static async start(): Promise<TestDnsServer> {
    const socket = createSocket('udp4');
    const server = new TestDnsServer(socket);
    socket.on('message', (query, peer) => socket.send(server.answer(query), peer.port, peer.address));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return server;
  }

  get address(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  /** The answer to one query: its A record if the table has the name, else NXDOMAIN (AAAA: no answer). */
  private answer(query: Buffer): Buffer {
    let offset = 12;
    const labels: string[] = [];
    while (query[offset]! > 0) {
      const length = query[offset]!;
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString('ascii'));
      offset += length + 1;
    }
    const questionEnd = offset + 5;
    const type = query.readUInt16BE(offset + 1);
    const address = this.records.get(labels.join('.').toLowerCase());
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    const answers = address !== undefined && type === 1 ? 1 : 0;
    // A response, recursion available, NXDOMAIN for a name the table lacks.
    header.writeUInt16BE(0x8180 | (address === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers, 6);
    const question = query.subarray(12, questionEnd);
    if (answers === 0) return Buffer.concat([header, question]);
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(1, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(0, 6);
    record.writeUInt16BE(4, 10);
    address!.split('.').forEach((part, index) => record.writeUInt8(Number(part), 12 + index));
    return Buffer.concat([header, question, record]);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

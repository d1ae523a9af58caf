import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { EngineNetworkGuard } from '@envengine/egress-rules';
import { signatureHeader } from './webhook-signing.ts';

/** What one attempt to deliver came to. */
export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** Why it failed; null for a 2xx. Never the receiver's body, which the engine does not keep. */
  error: string | null;
  /** The target's address is on the engine's own network. */
  refused: boolean;
}

export interface SendRequest {
  url: string;
  messageId: string;
  body: string;
  /** The secrets that sign it: the current one, and a previous one during its overlap. */
  secrets: readonly string[];
}

/** How much of a receiver's answer is read (then dropped): enough to end the exchange cleanly. */
const ANSWER_READ_BYTES = 64 * 1024;

/**
 * Sends a webhook's POST, signed as the Standard Webhooks specification says, to an address
 * that passed the engine's egress rule at connect time. Redirects are not followed (one
 * could lead onto the engine's network); a 3xx is a failure.
 */
export class WebhookSender {
  /**
   * Keep-alive connections, each made to an address the guard checked when it connected (a
   * name that resolves elsewhere later gets a new connection only through the guard again).
   */
  private readonly agents: { http: HttpAgent; https: HttpsAgent };

  constructor(
    private readonly guard: EngineNetworkGuard,
    private readonly timeoutMs: number,
  ) {
    const options = { keepAlive: true, maxSockets: 8, maxFreeSockets: 4, timeout: timeoutMs, lookup: guard.lookup };
    this.agents = { http: new HttpAgent(options), https: new HttpsAgent(options) };
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  async send(message: SendRequest): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(message.url);
    // A literal address is not looked up, so the agent's lookup would not judge it.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      const refusal = this.guard.refusal(host);
      if (refusal) return { ok: false, statusCode: null, latencyMs: elapsed(), error: `refused: ${refusal}`, refused: true };
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'envengine-webhooks/1',
      'webhook-id': message.messageId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(message.secrets, message.messageId, timestamp, message.body),
    };
    try {
      const statusCode = await this.post(url, headers, message.body);
      const ok = statusCode >= 200 && statusCode < 300;
      return { ok, statusCode, latencyMs: elapsed(), error: ok ? null : statusCode >= 300 && statusCode < 400 ? `answered ${statusCode}: redirects are not followed` : `answered ${statusCode}`, refused: false };
    } catch (error) {
      const failure = error as NodeJS.ErrnoException;
      const refused = failure.code === 'EREFUSEDADDRESS';
      return { ok: false, statusCode: null, latencyMs: elapsed(), error: `${refused ? 'refused: ' : ''}${failure.message}`.slice(0, 500), refused };
    }
  }

  private post(url: URL, headers: Record<string, string>, body: string): Promise<number> {
    const secure = url.protocol === 'https:';
    const send = secure ? httpsRequest : httpRequest;
    return new Promise<number>((resolve, reject) => {
      const request = send(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: secure ? this.agents.https : this.agents.http }, (answer: IncomingMessage) => {
        let read = 0;
        answer.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > ANSWER_READ_BYTES) answer.destroy();
        });
        // The status is what counts; the body is read only to end the exchange.
        // Read to its end, so that the connection is kept for the next delivery.
        answer.on('end', () => resolve(answer.statusCode ?? 0));
        answer.on('error', () => resolve(answer.statusCode ?? 0));
        answer.on('close', () => resolve(answer.statusCode ?? 0));
      });
      // The whole exchange, connection included, within the deadline.
      const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      request.on('close', () => clearTimeout(deadline));
      request.on('error', reject);
      request.end(body);
    });
  }
}

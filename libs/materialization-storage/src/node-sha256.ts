import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

/** What `SignatureV4` hashes with: SHA-256, or HMAC-SHA-256 when given a key (node:crypto, no extra package): for requests signed by hand, such as the object store's IAM API. */
export class NodeSha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    if (this.secret === undefined) return createHash('sha256');
    const key = typeof this.secret === 'string' ? this.secret : ArrayBuffer.isView(this.secret) ? new Uint8Array(this.secret.buffer, this.secret.byteOffset, this.secret.byteLength) : new Uint8Array(this.secret);
    return createHmac('sha256', key);
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}


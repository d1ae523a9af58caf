import type { ClientSession } from 'mongoose';

/**
 * Where secret values live. Rows in the `secrets` collection name the backend that holds
 * their values and which version is current; the backend keeps each version's value.
 * Writes take the transaction that moves the row, so a backend in the service's own
 * database (`local`) changes together with the row or not at all; a backend outside it
 * would need an outbox, and none is configured.
 */
export interface SecretBackend {
  readonly name: string;
  store(tenantId: string, secretId: string, version: number, value: string, writtenAt: Date, session: ClientSession): Promise<void>;
  /** The values of the given versions, by secret id; versions not stored are left out. */
  readVersions(tenantId: string, wanted: ReadonlyArray<{ secretId: string; version: number }>): Promise<Map<string, string>>;
  /** Destroys every version of the secret. */
  retire(tenantId: string, secretId: string, session: ClientSession): Promise<{ destroyed: number }>;
}

export class SecretBackends {
  private readonly byName: Map<string, SecretBackend>;

  constructor(
    backends: readonly SecretBackend[],
    /** The backend new secrets are written to. */
    readonly defaultName: string,
  ) {
    this.byName = new Map(backends.map((backend) => [backend.name, backend]));
    if (!this.byName.has(defaultName)) throw new Error(`no secret backend named ${defaultName}`);
  }

  get(name: string): SecretBackend {
    const backend = this.byName.get(name);
    if (!backend) throw new Error(`secret backend ${name} is not configured in this service`);
    return backend;
  }

  get default(): SecretBackend {
    return this.get(this.defaultName);
  }
}

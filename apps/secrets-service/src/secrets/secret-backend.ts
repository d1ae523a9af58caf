/**
 * Where secret values live. A backend hands out version numbers 1..N per secret id (no
 * two writers get the same one), returns the newest version, and destroys every version
 * on retirement. Rows in the `secrets` collection name the backend that holds their values.
 */
export interface SecretBackend {
  readonly name: string;
  store(secretId: string, value: string): Promise<{ version: number; writtenAt: Date }>;
  readLatest(secretId: string): Promise<{ version: number; value: string } | undefined>;
  describeLatest(secretId: string): Promise<{ version: number; writtenAt: Date } | undefined>;
  /** Idempotent: a second call destroys nothing and succeeds. */
  retire(secretId: string): Promise<{ destroyed: number }>;
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
}

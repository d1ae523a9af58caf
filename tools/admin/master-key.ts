import mongoose from 'mongoose';
import { LocalSecretStore } from '@envengine/local-secret-store';
import { generateMasterKeyText, MasterKeyring } from '@envengine/sealed-values';

/** `master-key new`: a fresh key, printed once, in the form SECRETS_MASTER_KEY takes. */
export function printNewMasterKey(): void {
  console.log(generateMasterKeyText());
}

/**
 * `master-key rewrap`: re-wraps every data key of the `local` backend under the active
 * master key (SECRETS_MASTER_KEY), opening them with the previous ones
 * (SECRETS_PREVIOUS_MASTER_KEYS). Runs against the live database while the service serves:
 * each record is updated only if it is still the one read. Exits 1 if any data key is
 * left under another key (then do not drop the previous key yet).
 */
export async function rewrapDataKeys(env: Record<string, string | undefined>): Promise<void> {
  const active = env.SECRETS_MASTER_KEY;
  if (!active) throw new Error('set SECRETS_MASTER_KEY to the new master key');
  const keyring = MasterKeyring.fromText(active, env.SECRETS_PREVIOUS_MASTER_KEYS ?? '');
  const mongoUrl = env.MONGO_URL ?? 'mongodb://127.0.0.1:27017/?replicaSet=rs0';
  const dbName = env.SECRETS_MONGO_DB ?? 'envengine_secrets';
  const connection = mongoose.createConnection(mongoUrl, { dbName, serverSelectionTimeoutMS: 5000 });
  try {
    await connection.asPromise();
    const store = new LocalSecretStore(connection, keyring);
    const report = await store.rewrapAll({
      onBatch: (done) => console.log(`  ${done} data keys re-wrapped so far`),
    });
    console.log(
      `re-wrapped ${report.rewrapped} data keys under master key ${keyring.active.id}; ` +
        `${report.skipped} changed or retired meanwhile; ${report.remaining} still under another key`,
    );
    if (report.remaining > 0) {
      console.log('Run the command again before removing the previous key from SECRETS_PREVIOUS_MASTER_KEYS.');
      process.exitCode = 1;
    } else {
      console.log('Every data key is under the active master key: the previous keys can be dropped.');
    }
  } finally {
    await connection.close();
  }
}

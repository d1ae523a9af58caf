import { Schema, createConnection } from 'mongoose';
import { describe, expect, it } from 'vitest';
import { TenantScopedModel } from './tenant-scoped-model.ts';

interface ThingDocument {
  _id: string;
  tenant_id: string;
  name: string;
}

// A connection that never connects: these tests look at types and at what is refused before any I/O.
const connection = createConnection();
const things = new TenantScopedModel(connection.model<ThingDocument>('Thing', new Schema<ThingDocument>({ _id: String, tenant_id: String, name: String })));

describe('TenantScopedModel', () => {
  it('cannot be asked for a document without a tenant: it does not compile, and at run time it is refused before any I/O', async () => {
    // `tsc` checks these lines (each must fail to compile, or @ts-expect-error fails the
    // typecheck); run anyway, as from JavaScript or through `any`, each is refused.
    const withoutTenant: Array<() => Promise<unknown>> = [
      // @ts-expect-error a lookup by `_id` alone has no tenant argument
      () => things.findOne({ _id: 'thing_1' }),
      // @ts-expect-error the same for writes
      () => things.updateOne({ _id: 'thing_1' }, { $set: { name: 'x' } }),
      // @ts-expect-error and for several updates at once
      () => things.updateEach([{ filter: { _id: 'thing_1' }, update: { $set: { name: 'x' } } }]),
      // @ts-expect-error and for deletes
      () => things.deleteOne({ _id: 'thing_1' }),
      // @ts-expect-error an insert names its tenant as an argument, not inside the document
      () => things.insert({ _id: 'thing_1', tenant_id: 'ten_1', name: 'x' }),
    ];
    for (const call of withoutTenant) await expect(Promise.resolve().then(call)).rejects.toThrow(/Thing: an? (query|insert) without a tenant/);
  });

  it('refuses an empty tenant before it sends anything', () => {
    expect(() => things.findOne('', { _id: 'thing_1' })).toThrow(/without a tenant/);
    expect(() => things.find('', {})).toThrow(/without a tenant/);
  });
});

import { describe, expect, it } from 'vitest';
import { columnSetsDiffer, storedColumnsMismatch } from './column-sets.ts';
import type { ColumnSpecInput } from '@envengine/contracts';

const id: ColumnSpecInput = { name: 'id', type: 'integer' };
const amount: ColumnSpecInput = { name: 'amount', type: 'number', nullable: true };

describe('columnSetsDiffer', () => {
  it('ignores column order and treats a missing nullable as false', () => {
    expect(columnSetsDiffer([id, amount], [amount, { ...id, nullable: false }])).toBe(false);
  });

  it('sees an added, removed or altered column', () => {
    expect(columnSetsDiffer([id], [id, amount])).toBe(true);
    expect(columnSetsDiffer([id, amount], [id])).toBe(true);
    expect(columnSetsDiffer([id], [{ ...id, type: 'string' }])).toBe(true);
    expect(columnSetsDiffer([id], [{ ...id, nullable: true }])).toBe(true);
    expect(columnSetsDiffer([id], [{ ...id, name: 'ID' }])).toBe(true);
  });

  it('treats two empty lists as equal', () => {
    expect(columnSetsDiffer([], [])).toBe(false);
  });

  it('keeps names apart that only a naive join would confuse', () => {
    expect(columnSetsDiffer([{ name: 'a,integer', type: 'string' }], [{ name: 'a', type: 'string' }])).toBe(true);
  });
});

describe('storedColumnsMismatch', () => {
  it('is null for the same set in any order', () => {
    expect(storedColumnsMismatch([id, amount], [amount, id])).toBeNull();
    expect(storedColumnsMismatch([], [])).toBeNull();
  });

  it('names a missing column', () => {
    expect(storedColumnsMismatch([id, amount], [id])).toBe('Declared column "amount" is missing from the stored columns.');
  });

  it('names an extra column', () => {
    expect(storedColumnsMismatch([id], [id, { name: 'note', type: 'string' }])).toBe(
      'Stored column "note" (string, not nullable) is not declared.',
    );
  });

  it('names a type difference', () => {
    expect(storedColumnsMismatch([id], [{ name: 'id', type: 'string' }])).toBe(
      'Column "id" is declared as integer but stored as string.',
    );
  });

  it('names a nullability difference', () => {
    expect(storedColumnsMismatch([amount], [{ ...amount, nullable: false }])).toBe(
      'Column "amount" is declared nullable but stored not nullable.',
    );
  });

  it('reports the first difference in declared order, then extras', () => {
    const stored: ColumnSpecInput[] = [{ name: 'extra', type: 'json' }, { ...id, type: 'string' }];
    expect(storedColumnsMismatch([amount, id], stored)).toBe('Declared column "amount" is missing from the stored columns.');
    expect(storedColumnsMismatch([id, amount], stored)).toBe('Column "id" is declared as integer but stored as string.');
  });
});

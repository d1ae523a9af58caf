import { describe, expect, it } from 'vitest';
import type { DeclaredSchema } from './declared-schema.ts';
import { checkRows, RowSchemaError } from './row-check.ts';

const ALL_TYPES: DeclaredSchema = {
  columns: [
    { name: 'name', type: 'string' },
    { name: 'count', type: 'integer' },
    { name: 'amount', type: 'number' },
    { name: 'paid', type: 'boolean' },
    { name: 'at', type: 'timestamp' },
    { name: 'day', type: 'date' },
    { name: 'extra', type: 'json' },
  ],
};

const GOOD_ROW = {
  name: 'a',
  count: 1,
  amount: 1.5,
  paid: true,
  at: '2024-05-01T10:00:00Z',
  day: '2024-05-01',
  extra: { tags: ['x'], nested: { n: 1, ok: false, none: null } },
};

/** The RowSchemaError that `checkRows` throws, or a failure when it does not throw one. */
function violation(schema: DeclaredSchema, rows: unknown[]): RowSchemaError {
  try {
    checkRows(schema, rows);
  } catch (error) {
    if (error instanceof RowSchemaError) return error;
    throw error;
  }
  throw new Error('checkRows accepted the rows');
}

/** The violation of a row that is GOOD_ROW with one column replaced. */
function violationWith(column: string, value: unknown): RowSchemaError {
  return violation(ALL_TYPES, [GOOD_ROW, { ...GOOD_ROW, [column]: value }]);
}

describe('checkRows', () => {
  it('accepts rows of every declared type, in each accepted form', () => {
    const rows = [
      GOOD_ROW,
      {
        ...GOOD_ROW,
        name: '',
        count: 2n ** 63n - 1n,
        amount: -0,
        paid: false,
        at: new Date(0),
        day: new Date('2024-02-29T00:00:00Z'),
        extra: 'just a string',
      },
      { ...GOOD_ROW, count: -(2n ** 63n), at: '2024-05-01 10:00:00.123456789+05:30', extra: [1, 'two', null, { three: 3 }] },
      { ...GOOD_ROW, count: Number.MAX_SAFE_INTEGER, at: '2024-05-01T10:00-0800', extra: { skipped: undefined } },
    ];
    expect(() => checkRows(ALL_TYPES, rows)).not.toThrow();
  });

  it('lets a nullable column be null or left out', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'note', type: 'string', nullable: true }] };
    expect(() => checkRows(schema, [{ id: 1, note: null }, { id: 2 }, { id: 3, note: undefined }])).not.toThrow();
  });

  it('names the row and the column in a RowSchemaError', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number' }] };
    const rows = [{ id: 1, amount: 1 }, { id: 2, amount: 2 }, { id: 3, amount: 3 }, { id: 4, amount: '12' }];
    const error = violation(schema, rows);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('RowSchemaError');
    expect(error.row).toBe(3);
    expect(error.column).toBe('amount');
    expect(error.message).toBe('row 3, column "amount": expected number (finite), got string "12"');
  });

  it('reports the first violation: the earliest row, then the first declared column', () => {
    const error = violation(ALL_TYPES, [GOOD_ROW, { ...GOOD_ROW, amount: 'x', name: 7 }, { ...GOOD_ROW, name: 8 }]);
    expect([error.row, error.column]).toEqual([1, 'name']);
  });

  it('refuses a missing non-nullable column', () => {
    const { amount: _left, ...row } = GOOD_ROW;
    const error = violation(ALL_TYPES, [row]);
    expect([error.row, error.column]).toEqual([0, 'amount']);
    expect(error.message).toContain('got nothing (the column is missing); the column is not nullable');
  });

  it('refuses null, or undefined, in a non-nullable column', () => {
    expect(violationWith('name', null).message).toBe('row 1, column "name": expected string, got null; the column is not nullable');
    expect(violationWith('name', undefined).message).toContain('got nothing');
  });

  it('refuses a column the schema does not declare', () => {
    const error = violation(ALL_TYPES, [{ ...GOOD_ROW, surprise: 1 }]);
    expect([error.row, error.column]).toEqual([0, 'surprise']);
    expect(error.message).toBe('row 0, column "surprise": not a declared column of the asset');
  });

  it('refuses an undeclared column even when it is set to undefined', () => {
    expect(violation(ALL_TYPES, [{ ...GOOD_ROW, surprise: undefined }]).column).toBe('surprise');
  });

  it.each([[null], [['a']], ['row'], [3]])('refuses a row that is not an object (%j), with no column', (row) => {
    const error = violation(ALL_TYPES, [GOOD_ROW, row]);
    expect([error.row, error.column]).toEqual([1, null]);
    expect(error.message).toMatch(/^row 1: expected an object of column values, got /);
  });

  it('reads only own properties for a column named like an Object.prototype member', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'constructor', type: 'string' }, { name: 'toString', type: 'string', nullable: true }] };
    expect(() => checkRows(schema, [{ constructor: 'x' }])).not.toThrow();
    expect(violation(schema, [{}]).message).toContain('column "constructor": expected string, got nothing');
  });

  const mismatches: Array<[string, unknown, string]> = [
    ['name', 5, 'expected string, got number 5'],
    ['name', 'broken \ud800 pair', 'got string "broken \\ud800 pair" with a lone surrogate (not valid Unicode)'],
    ['count', 1.5, 'got number 1.5'],
    ['count', '1', 'got string "1"'],
    ['count', 2 ** 53, 'got number 9007199254740992 (beyond Number.MAX_SAFE_INTEGER: pass a bigint)'],
    ['count', 2n ** 63n, 'got bigint 9223372036854775808n'],
    ['count', -(2n ** 63n) - 1n, 'got bigint -9223372036854775809n'],
    ['amount', Number.NaN, 'expected number (finite), got number NaN'],
    ['amount', Number.POSITIVE_INFINITY, 'got number Infinity'],
    ['amount', 1n, 'got bigint 1n'],
    ['paid', 'true', 'expected boolean, got string "true"'],
    ['paid', 1, 'got number 1'],
    ['at', '2024-05-01T10:00:00', 'got string "2024-05-01T10:00:00"'],
    ['at', '2024-05-01', 'got string "2024-05-01"'],
    ['at', '2024-13-01T10:00:00Z', 'got string "2024-13-01T10:00:00Z"'],
    ['at', 'yesterday', 'got string "yesterday"'],
    ['at', new Date(Number.NaN), 'got invalid Date'],
    ['at', 1714557600000, 'got number 1714557600000'],
    ['day', '2023-02-29', 'got string "2023-02-29"'],
    ['day', '2024-5-1', 'got string "2024-5-1"'],
    ['day', '2024-05-01T00:00:00Z', 'got string "2024-05-01T00:00:00Z"'],
    ['day', new Date('2024-05-01T10:00:00Z'), 'got Date 2024-05-01T10:00:00.000Z'],
    ['extra', 1n, 'expected JSON value, got bigint 1n at $'],
    ['extra', { values: [1, Number.NaN] }, 'got number NaN at $.values[1]'],
    ['extra', { when: new Date(0) }, 'got Date 1970-01-01T00:00:00.000Z at $.when'],
    ['extra', { 'odd key': new Map() }, 'got Map object at $["odd key"]'],
    ['extra', [1, undefined], 'got undefined at $[1]'],
    ['extra', () => 1, 'got function at $'],
  ];
  it.each(mismatches)('refuses, in column %s, the value %o', (column, value, expected) => {
    const error = violationWith(column, value);
    expect([error.row, error.column]).toEqual([1, column]);
    expect(error.message).toContain(expected);
  });

  it('refuses a circular JSON value instead of overflowing the stack', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(violationWith('extra', cyclic).message).toContain('got a circular reference at $.self');
  });

  it('accepts the same object twice in one JSON value, which is not a cycle', () => {
    const shared = { x: 1 };
    expect(() => checkRows(ALL_TYPES, [{ ...GOOD_ROW, extra: { a: shared, b: [shared, shared] } }])).not.toThrow();
  });

  it('rejects a malformed schema as a programming error, not a row error', () => {
    expect(() => checkRows({ columns: [{ name: 'a', type: 'string' }, { name: 'a', type: 'integer' }] }, [])).toThrow(/declared twice/);
    expect(() => checkRows({ columns: [{ name: 'a', type: 'float' as 'number' }] }, [])).toThrow(/declared types are/);
  });
});

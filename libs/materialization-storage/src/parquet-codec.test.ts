import { parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { decodeParquet, describeParquet, encodeParquet, ParquetFileError, readParquetHead, SCHEMA_METADATA_KEY, storedColumnsOf } from './parquet-codec.ts';
import { RowSchemaError } from './row-check.ts';

const TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'] as const;

/** One required and one nullable column of every type. */
const SCHEMA: DeclaredSchema = {
  columns: TYPES.flatMap((type) => [
    { name: type, type },
    { name: `${type}_or_null`, type, nullable: true },
  ]),
};

const ROWS: Row[] = [
  {
    string: 'héllo, wörld ✓',
    string_or_null: '',
    integer: 42,
    integer_or_null: -(2n ** 63n),
    number: 3.25,
    number_or_null: -0.5,
    boolean: true,
    boolean_or_null: false,
    timestamp: new Date('2024-05-01T10:30:00.123Z'),
    timestamp_or_null: '2024-05-01T12:30:00.123456+02:00',
    date: '2024-02-29',
    date_or_null: new Date('1969-12-31T00:00:00Z'),
    json: { tags: ['a', 'b'], nested: { n: 1.5, ok: false, none: null } },
    json_or_null: [1, 'two', null],
  },
  {
    string: '',
    string_or_null: null,
    integer: 2n ** 63n - 1n,
    integer_or_null: null,
    number: Number.MAX_VALUE,
    number_or_null: null,
    boolean: false,
    boolean_or_null: null,
    timestamp: '1969-12-31T23:59:59.999999Z',
    timestamp_or_null: null,
    date: '0099-03-01',
    date_or_null: null,
    json: 'a JSON string',
    json_or_null: null,
  },
  // Nullable columns left out altogether.
  { string: 's', integer: -7, number: 0, boolean: true, timestamp: '2024-05-01T10:30Z', date: new Date(0), json: 0 },
];

const EXPECTED: Row[] = [
  {
    string: 'héllo, wörld ✓',
    string_or_null: '',
    integer: 42,
    integer_or_null: -(2n ** 63n),
    number: 3.25,
    number_or_null: -0.5,
    boolean: true,
    boolean_or_null: false,
    timestamp: '2024-05-01T10:30:00.123Z',
    timestamp_or_null: '2024-05-01T10:30:00.123456Z',
    date: '2024-02-29',
    date_or_null: '1969-12-31',
    json: { tags: ['a', 'b'], nested: { n: 1.5, ok: false, none: null } },
    json_or_null: [1, 'two', null],
  },
  {
    string: '',
    string_or_null: null,
    integer: 2n ** 63n - 1n,
    integer_or_null: null,
    number: Number.MAX_VALUE,
    number_or_null: null,
    boolean: false,
    boolean_or_null: null,
    timestamp: '1969-12-31T23:59:59.999999Z',
    timestamp_or_null: null,
    date: '0099-03-01',
    date_or_null: null,
    json: 'a JSON string',
    json_or_null: null,
  },
  {
    string: 's',
    string_or_null: null,
    integer: -7,
    integer_or_null: null,
    number: 0,
    number_or_null: null,
    boolean: true,
    boolean_or_null: null,
    timestamp: '2024-05-01T10:30:00.000Z',
    timestamp_or_null: null,
    date: '1970-01-01',
    date_or_null: null,
    json: 0,
    json_or_null: null,
  },
];

/** A Parquet file written by hyparquet-writer directly, as another writer might. */
function foreignFile(columnData: ColumnSource[], kvMetadata?: Array<{ key: string; value: string }>): Uint8Array {
  return new Uint8Array(parquetWriteBuffer({ columnData, kvMetadata }));
}

describe('encodeParquet and decodeParquet', () => {
  it('round-trips every declared type, with nulls and left-out nullable columns', async () => {
    const rows = await decodeParquet(encodeParquet(SCHEMA, ROWS));
    expect(rows).toEqual(EXPECTED);
  });

  it('returns integers as numbers when safe and as bigints beyond', async () => {
    const schema: DeclaredSchema = { columns: [{ name: 'n', type: 'integer' }] };
    const values = [0, -1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 5n, 2n ** 53n, -(2n ** 53n)];
    const rows = await decodeParquet(encodeParquet(schema, values.map((n) => ({ n }))));
    expect(rows.map((row) => row.n)).toEqual([0, -1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 5, 2n ** 53n, -(2n ** 53n)]);
  });

  it('stores each declared type as its Parquet type, required unless nullable', () => {
    const metadata = parquetMetadata(encodeParquet(SCHEMA, ROWS));
    const byName = new Map(metadata.schema.slice(1).map((element) => [element.name, element]));
    const shape = (name: string) => {
      const element = byName.get(name)!;
      return [element.type, element.converted_type, element.logical_type?.type, element.repetition_type];
    };
    expect(shape('string')).toEqual(['BYTE_ARRAY', 'UTF8', 'STRING', 'REQUIRED']);
    expect(shape('integer')).toEqual(['INT64', 'INT_64', 'INTEGER', 'REQUIRED']);
    expect(shape('number')).toEqual(['DOUBLE', undefined, undefined, 'REQUIRED']);
    expect(shape('boolean')).toEqual(['BOOLEAN', undefined, undefined, 'REQUIRED']);
    expect(shape('timestamp')).toEqual(['INT64', 'TIMESTAMP_MICROS', 'TIMESTAMP', 'REQUIRED']);
    expect(byName.get('timestamp')!.logical_type).toEqual({ type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' });
    expect(shape('date')).toEqual(['INT32', 'DATE', 'DATE', 'REQUIRED']);
    expect(shape('json')).toEqual(['BYTE_ARRAY', 'JSON', 'JSON', 'REQUIRED']);
    for (const type of TYPES) expect(byName.get(`${type}_or_null`)!.repetition_type).toBe('OPTIONAL');
  });

  it('writes the declared columns, defaults applied, into the key-value metadata', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'a', type: 'json' }, { name: 'b', type: 'date', nullable: true }] };
    const metadata = parquetMetadata(encodeParquet(schema, []));
    const entry = metadata.key_value_metadata?.find(({ key }) => key === SCHEMA_METADATA_KEY);
    expect(JSON.parse(entry!.value!)).toEqual({
      columns: [
        { name: 'a', type: 'json', nullable: false },
        { name: 'b', type: 'date', nullable: true },
      ],
    });
  });

  it('round-trips zero rows, keeping the columns', async () => {
    const bytes = encodeParquet(SCHEMA, []);
    expect(await decodeParquet(bytes)).toEqual([]);
    expect(describeParquet(bytes)).toEqual({ columns: storedColumnsOf(encodeParquet(SCHEMA, ROWS)), row_count: 0 });
  });

  it('round-trips rows spread over several row groups', async () => {
    const schema: DeclaredSchema = { columns: [{ name: 'i', type: 'integer' }, { name: 's', type: 'string', nullable: true }] };
    const rows = Array.from({ length: 2_500 }, (_, i) => ({ i, s: i % 7 === 0 ? null : `v${i % 13}` }));
    const bytes = encodeParquet(schema, rows, 1_000);
    expect(parquetMetadata(bytes).row_groups.length).toBeGreaterThan(1);
    expect(await decodeParquet(bytes)).toEqual(rows);
  });

  it('stores null for a left-out nullable column named like an Object.prototype member', async () => {
    const schema: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'toString', type: 'string', nullable: true }] };
    expect(await decodeParquet(encodeParquet(schema, [{ id: 1 }, { id: 2, toString: 'own' }]))).toEqual([
      { id: 1, toString: null },
      { id: 2, toString: 'own' },
    ]);
  });

  it('reads a file from a view into a larger buffer', async () => {
    const bytes = encodeParquet(SCHEMA, ROWS);
    const padded = new Uint8Array(bytes.byteLength + 32);
    padded.set(bytes, 16);
    expect(await decodeParquet(padded.subarray(16, 16 + bytes.byteLength))).toEqual(EXPECTED);
  });

  it('checks the rows before encoding them', () => {
    expect(() => encodeParquet(SCHEMA, [{ ...ROWS[0], date: '2024-02-30' }])).toThrow(RowSchemaError);
  });

  it('refuses a schema without columns, which could not count its rows', () => {
    expect(() => encodeParquet({ columns: [] }, [{}])).toThrow(/without columns/);
  });
});

describe('storedColumnsOf', () => {
  it('reads the declared type names and nullability back from the file', () => {
    expect(storedColumnsOf(encodeParquet(SCHEMA, ROWS))).toEqual(
      TYPES.flatMap((type) => [
        { name: type, type, nullable: false },
        { name: `${type}_or_null`, type, nullable: true },
      ]),
    );
  });

  it('derives the columns from the file schema, not from the key-value metadata', () => {
    const lying = JSON.stringify({ columns: [{ name: 'n', type: 'boolean', nullable: true }, { name: 'ghost', type: 'string' }] });
    const bytes = foreignFile([{ name: 'n', data: [1n, 2n], type: 'INT64', nullable: false }], [{ key: SCHEMA_METADATA_KEY, value: lying }]);
    expect(storedColumnsOf(bytes)).toEqual([{ name: 'n', type: 'integer', nullable: false }]);
  });

  it('maps files of other writers: INT32 integers, millisecond timestamps, no metadata', async () => {
    const bytes = foreignFile([
      { name: 'i', data: [1, 2] },
      { name: 't', data: [new Date('2024-05-01T10:30:00.123Z'), null] },
      { name: 'f', data: [0.5, 1.5], type: 'FLOAT' },
    ]);
    expect(storedColumnsOf(bytes)).toEqual([
      { name: 'i', type: 'integer', nullable: false },
      { name: 't', type: 'timestamp', nullable: true },
      { name: 'f', type: 'number', nullable: true },
    ]);
    expect(await decodeParquet(bytes)).toEqual([
      { i: 1, t: '2024-05-01T10:30:00.123Z', f: 0.5 },
      { i: 2, t: null, f: 1.5 },
    ]);
  });

  it('reads nanosecond timestamps down to the microsecond, rounding towards the past', async () => {
    const bytes = new Uint8Array(
      parquetWriteBuffer({
        columnData: [{ name: 't', data: [1_714_559_400_123_456_789n, -1n] }],
        schema: [
          { name: 'root', num_children: 1 },
          { name: 't', type: 'INT64', repetition_type: 'REQUIRED', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'NANOS' } },
        ],
      }),
    );
    expect(storedColumnsOf(bytes)).toEqual([{ name: 't', type: 'timestamp', nullable: false }]);
    expect(await decodeParquet(bytes)).toEqual([{ t: '2024-05-01T10:30:00.123456Z' }, { t: '1969-12-31T23:59:59.999999Z' }]);
  });

  it('takes the declared type only to tell JSON written as plain UTF-8 from a string', async () => {
    const column: ColumnSource = { name: 'doc', data: ['{"a":[1,2]}', null], type: 'STRING' };
    const declaredJson = JSON.stringify({ columns: [{ name: 'doc', type: 'json', nullable: true }] });
    const asJson = foreignFile([column], [{ key: SCHEMA_METADATA_KEY, value: declaredJson }]);
    expect(storedColumnsOf(asJson)).toEqual([{ name: 'doc', type: 'json', nullable: true }]);
    expect(await decodeParquet(asJson)).toEqual([{ doc: { a: [1, 2] } }, { doc: null }]);
    expect(storedColumnsOf(foreignFile([column]))).toEqual([{ name: 'doc', type: 'string', nullable: true }]);
    const malformed = foreignFile([column], [{ key: SCHEMA_METADATA_KEY, value: '{not json' }]);
    expect(storedColumnsOf(malformed)).toEqual([{ name: 'doc', type: 'string', nullable: true }]);
  });

  it('refuses a repeated column, even one directly under the root', () => {
    const bytes = new Uint8Array(
      parquetWriteBuffer({
        columnData: [{ name: 'r', data: [] }],
        schema: [{ name: 'root', num_children: 1 }, { name: 'r', type: 'INT32', repetition_type: 'REPEATED' }],
      }),
    );
    expect(() => storedColumnsOf(bytes)).toThrow(new ParquetFileError('Column "r" of the Parquet file is nested or repeated; materializations store flat columns only.'));
  });

  it.each<[string, ColumnSource]>([
    ['a UUID column', { name: 'id', data: ['00112233-4455-6677-8899-aabbccddeeff'], type: 'UUID' }],
    ['a nested VARIANT column', { name: 'v', data: [{ a: 1 }], type: 'VARIANT' }],
    ['an untyped byte array', { name: 'raw', data: [new Uint8Array([1, 2])], type: 'BYTE_ARRAY' }],
  ])('refuses %s with a ParquetFileError naming the column', (_what, column) => {
    expect(() => storedColumnsOf(foreignFile([column]))).toThrow(ParquetFileError);
    expect(() => storedColumnsOf(foreignFile([column]))).toThrow(new RegExp(`"${column.name}"|nested`));
  });
});

describe('a file that is not a readable Parquet file', () => {
  const good = encodeParquet(SCHEMA, ROWS);
  const footerLength = new DataView(good.buffer, good.byteOffset + good.byteLength - 8, 4).getUint32(0, true);
  const tamperings: Array<[string, () => Uint8Array]> = [
    ['empty bytes', () => new Uint8Array(0)],
    ['a text file', () => new TextEncoder().encode('id,name\n1,alice\n')],
    ['a truncated file', () => good.slice(0, good.byteLength - 100)],
    ['a file missing its trailing magic', () => good.slice(0, good.byteLength - 1)],
    [
      'a footer length past the start of the file',
      () => {
        const bytes = good.slice();
        new DataView(bytes.buffer).setUint32(bytes.byteLength - 8, bytes.byteLength, true);
        return bytes;
      },
    ],
    [
      'a zeroed footer',
      () => {
        const bytes = good.slice();
        bytes.fill(0, bytes.byteLength - 8 - footerLength, bytes.byteLength - 8);
        return bytes;
      },
    ],
  ];

  it.each(tamperings)('fails clearly on %s, in storedColumnsOf and decodeParquet', async (_what, tamper) => {
    const bytes = tamper();
    expect(() => storedColumnsOf(bytes)).toThrow(ParquetFileError);
    expect(() => storedColumnsOf(bytes)).toThrow(/Parquet/);
    await expect(decodeParquet(bytes)).rejects.toThrow(ParquetFileError);
  });

  it('fails clearly when the data pages are garbled but the footer is intact', async () => {
    const bytes = good.slice();
    const dataEnd = bytes.byteLength - 8 - footerLength;
    bytes.fill(0xff, 4, dataEnd);
    await expect(decodeParquet(bytes)).rejects.toThrow(ParquetFileError);
  });
});

describe('readParquetHead', () => {
  const schema: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'note', type: 'string', nullable: true }] };
  const rows: Row[] = Array.from({ length: 2000 }, (_, id) => ({ id, note: `row ${id}`.padEnd(200, '.') }));

  /** An in-memory file read by ranges, counting what was fetched. */
  function rangeFile(bytes: Uint8Array) {
    const fetched = { bytes: 0 };
    const file = {
      byteLength: bytes.byteLength,
      slice: async (start: number, end = bytes.byteLength) => {
        fetched.bytes += end - start;
        return bytes.slice(start, end).buffer;
      },
    };
    return { file, fetched };
  }

  it('gives the first rows as decodeParquet does, with the row count and columns', async () => {
    const bytes = encodeParquet(schema, rows);
    const head = await readParquetHead(rangeFile(bytes).file, 3, 64 * 1024 * 1024);
    expect(head.rows).toEqual((await decodeParquet(bytes)).slice(0, 3));
    expect(head.row_count).toBe(2000);
    expect(head.columns.map((column) => column.name)).toEqual(['id', 'note']);
  });

  it('stops at its byte budget: a file whose rows need more is refused, not read whole', async () => {
    const { file, fetched } = rangeFile(encodeParquet(schema, rows));
    await expect(readParquetHead(file, 3, 4096)).rejects.toThrow(/needs more than 4096 bytes/);
    expect(fetched.bytes).toBeLessThanOrEqual(4096);
  });

  it('refuses a footer that claims gigabytes before fetching them', async () => {
    // A 4 GiB "file" whose last 8 bytes claim a 2 GiB footer: only the tail is ever asked for.
    const byteLength = 2 ** 32;
    const asked: number[] = [];
    const file = {
      byteLength,
      slice: async (start: number, end = byteLength) => {
        asked.push(end - start);
        const tail = new Uint8Array(end - start);
        if (end === byteLength) tail.set([0xff, 0xff, 0xff, 0x7f, 0x50, 0x41, 0x52, 0x31], tail.length - 8);
        return tail.buffer;
      },
    };
    await expect(readParquetHead(file, 20, 1024 * 1024)).rejects.toThrow(ParquetFileError);
    expect(Math.max(...asked)).toBeLessThanOrEqual(1024 * 1024);
  });
});

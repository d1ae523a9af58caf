import fc from 'fast-check';
import { parquetMetadata, type ColumnChunk } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { ByteSink } from './byte-sink.ts';
import type { ColumnType, DeclaredSchema, Row } from './declared-schema.ts';
import { writeRleHybrid } from './flat-parquet-writer.ts';
import { decodeParquet, encodeParquet } from './parquet-codec.ts';

/** The chunk metadata of one column in each row group. */
function chunksOf(bytes: Uint8Array, column: string): NonNullable<ColumnChunk['meta_data']>[] {
  return parquetMetadata(bytes).row_groups.map((group) => group.columns.find((chunk) => chunk.meta_data?.path_in_schema[0] === column)!.meta_data!);
}

/** A cell as decodeParquet gives it back. */
function decoded(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'integer' && typeof value === 'bigint' && value >= -Number.MAX_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER) return Number(value);
  return value;
}

const CELLS: Record<'string' | 'integer' | 'number' | 'boolean' | 'json', fc.Arbitrary<unknown>> = {
  // Few distinct values (dictionary pages) or many (plain), ASCII and not.
  string: fc.oneof(fc.constantFrom('a', 'b', 'ünï', '', '✓ done'), fc.string({ unit: 'grapheme', maxLength: 12 })),
  integer: fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
  number: fc.double({ noNaN: true, noDefaultInfinity: true }),
  boolean: fc.boolean(),
  json: fc.oneof(fc.constantFrom({ a: 1 }, [1, 2], 'x'), fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as unknown).filter((value) => value !== null)),
};

describe('the flat Parquet writer, read back by another reader (hyparquet)', () => {
  it('round-trips any rows of every type, nullable or not, over row groups of any size', async () => {
    const types = Object.keys(CELLS) as Array<keyof typeof CELLS>;
    const schema: DeclaredSchema = {
      columns: types.flatMap((type) => [
        { name: type, type },
        { name: `${type}_or_null`, type, nullable: true },
      ]),
    };
    const row = fc.record(
      Object.fromEntries(types.flatMap((type) => [[type, CELLS[type]], [`${type}_or_null`, fc.option(CELLS[type], { freq: 3 })]])),
    ) as fc.Arbitrary<Row>;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 120 }), fc.integer({ min: 1, max: 50 }), async (rows, rowsPerGroup) => {
        const back = await decodeParquet(encodeParquet(schema, rows, rowsPerGroup));
        const expected = rows.map((r) => Object.fromEntries(schema.columns.map(({ name, type }) => [name, decoded(type, r[name])])));
        // -0 is stored as it is; toEqual tells -0 from 0, as Parquet's plain doubles do.
        expect(back).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });

  it('writes repeated strings as a dictionary and mostly distinct ones plainly', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'region', type: 'string' }, { name: 'key', type: 'string' }] };
    const rows = Array.from({ length: 1000 }, (_, i) => ({ region: ['eu', 'us', 'apac'][i % 3], key: `k-${i}` }));
    const bytes = encodeParquet(schema, rows);
    const [region] = chunksOf(bytes, 'region');
    expect(region!.encodings).toContain('RLE_DICTIONARY');
    expect(region!.dictionary_page_offset).toBeDefined();
    const [key] = chunksOf(bytes, 'key');
    expect(key!.encodings).toEqual(['PLAIN']);
    expect(key!.dictionary_page_offset).toBeUndefined();
  });

  it('refuses a row group of no rows rather than looping forever', () => {
    expect(() => encodeParquet({ columns: [{ name: 'n', type: 'integer' }] }, [{ n: 1 }], 0)).toThrow(RangeError);
  });

  it('names its writer as the format asks, so that parquet-mr keeps its string statistics', () => {
    expect(parquetMetadata(encodeParquet({ columns: [{ name: 's', type: 'string' }] }, [{ s: 'a' }])).created_by).toMatch(/^envengine version \S+ \(build [^)]+\)$/);
  });

  it('gives each chunk its null count and its min and max in the type\'s order', () => {
    const schema: DeclaredSchema = {
      columns: [
        { name: 's', type: 'string', nullable: true },
        { name: 'plain', type: 'string' },
        { name: 'i', type: 'integer' },
        { name: 'x', type: 'number', nullable: true },
        { name: 'b', type: 'boolean' },
        { name: 'd', type: 'date' },
      ],
    };
    // Byte order, not UTF-16 order: U+FF5E sorts before U+1F600 in UTF-8, after it in UTF-16 units.
    const strings = ['m', null, '\u{1F600}', '\uFF5E', 'B', null];
    const rows = strings.map((s, i) => ({
      s,
      plain: `${['\u{1F600}', 'a', '\uFF5E', 'Z', 'b', 'y'][i]}-${i}`,
      i: [5, -(2n ** 63n), 2n ** 62n, 0, -3, 7][i],
      x: [0, 1.5, null, -2.25, 0, 3][i],
      b: i % 2 === 0,
      d: ['2024-01-02', '1969-07-20', '2024-01-01', '2000-02-29', '2024-01-02', '1970-01-01'][i],
    }));
    const bytes = encodeParquet(schema, rows);
    const stats = (name: string) => chunksOf(bytes, name)[0]!.statistics!;
    expect(stats('s')).toMatchObject({ null_count: 2n, min_value: 'B', max_value: '\u{1F600}' });
    expect(stats('plain')).toMatchObject({ null_count: 0n, min_value: 'Z-3', max_value: '\u{1F600}-0' });
    expect(stats('i')).toMatchObject({ null_count: 0n, min_value: -(2n ** 63n), max_value: 2n ** 62n });
    expect(stats('x')).toMatchObject({ null_count: 1n, min_value: -2.25, max_value: 3 });
    expect(stats('b')).toMatchObject({ min_value: false, max_value: true });
    expect(stats('d')).toMatchObject({ min_value: new Date('1969-07-20T00:00:00Z'), max_value: new Date('2024-01-02T00:00:00Z') });
  });

  it('writes a min of zero as -0 and a max of zero as +0, and leaves out strings too long to bound', () => {
    const schema: DeclaredSchema = { columns: [{ name: 'zeros', type: 'number' }, { name: 'negative_zeros', type: 'number' }, { name: 'long', type: 'string' }] };
    const bytes = encodeParquet(schema, [
      { zeros: 0, negative_zeros: -0, long: 'a'.repeat(65) },
      { zeros: 0, negative_zeros: -0, long: 'b'.repeat(65) },
    ]);
    expect(Object.is(chunksOf(bytes, 'zeros')[0]!.statistics!.min_value, -0)).toBe(true);
    expect(Object.is(chunksOf(bytes, 'negative_zeros')[0]!.statistics!.max_value, 0)).toBe(true);
    const long = chunksOf(bytes, 'long')[0]!.statistics!;
    expect(long.min_value).toBeUndefined();
    expect(long.max_value).toBeUndefined();
    expect(long.null_count).toBe(0n);
  });
});

/** Reads `count` values of an RLE / bit-packed hybrid back, as the format describes it. */
function readRleHybrid(bytes: Uint8Array, count: number, bitWidth: number): number[] {
  const values: number[] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (values.length < count) {
    const header = varint();
    if (header % 2 === 0) {
      let value = 0;
      for (let b = 0; b < Math.ceil(bitWidth / 8); b++) value += bytes[at++]! * 2 ** (8 * b);
      for (let n = 0; n < header / 2; n++) values.push(value);
    } else {
      const total = ((header - 1) / 2) * 8;
      let bitAt = at * 8;
      for (let n = 0; n < total; n++) {
        let value = 0;
        for (let b = 0; b < bitWidth; b++, bitAt++) value += ((bytes[bitAt >> 3]! >> (bitAt & 7)) & 1) * 2 ** b;
        values.push(value);
      }
      at += ((header - 1) / 2) * bitWidth;
    }
  }
  return values.slice(0, count);
}

describe('writeRleHybrid', () => {
  it('writes any values of any width so that the format reads them back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }).chain((bitWidth) =>
          fc.tuple(
            fc.constant(bitWidth),
            // Runs of repeated values beside noise, so both kinds of run are written.
            fc.array(fc.tuple(fc.integer({ min: 0, max: 2 ** bitWidth - 1 }), fc.integer({ min: 1, max: 20 })), { maxLength: 40 }),
          ),
        ),
        ([bitWidth, runs]) => {
          const values = Int32Array.from(runs.flatMap(([value, times]) => Array<number>(times).fill(value)));
          const sink = new ByteSink(16);
          writeRleHybrid(sink, values, values.length, bitWidth);
          expect(readRleHybrid(sink.written(), values.length, bitWidth)).toEqual([...values]);
        },
      ),
      { numRuns: 500 },
    );
  });
});

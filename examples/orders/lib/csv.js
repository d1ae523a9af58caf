// A small CSV reader for the example's seed file: a header line, comma-separated values,
// no quoting (the file has none).
export function parseCsv(text) {
  const [header, ...lines] = text.trim().split(/\r?\n/);
  const names = header.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((value, index) => [names[index], value])));
}

// Baseline: the cheapest JSON answer Node can give.
import { createServer } from 'node:http';

const body = JSON.stringify({ data: { hello: 'world' } });
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));

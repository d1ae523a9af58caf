// Baseline: a bare Express 5 app answering JSON.
import express from 'express';

const app = express();
app.get('/hello', (_req, res) => {
  res.json({ data: { hello: 'world' } });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
server.keepAliveTimeout = 65_000;

// Baseline: a bare Express 5 app reading one environment with the native MongoDB driver,
// from the same collection and index the placement service uses.
import express from 'express';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.env.MONGO_URL, { maxPoolSize: 32 });
await client.connect();
const environments = client.db(process.env.MONGO_DB).collection('environments');
const tenantId = process.env.TENANT_ID;

const app = express();
app.get('/environments/:name', async (req, res) => {
  const doc = await environments.findOne({ tenant_id: tenantId, name: req.params.name });
  if (!doc) {
    res.status(404).json({ error: { code: 'not_found' } });
    return;
  }
  res.json({ data: doc });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
server.keepAliveTimeout = 65_000;

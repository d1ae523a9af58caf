// Baseline for the secrets suite: a bare Express 5 app with the native MongoDB driver,
// on the same database server: PUT inserts one document of the size a sealed secret
// version has; POST /resolve reads one document by primary key (the cheapest read).
import { randomBytes } from 'node:crypto';
import express from 'express';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.env.MONGO_URL, { maxPoolSize: 32 });
await client.connect();
const documents = client.db(process.env.MONGO_DB).collection('bare_documents');
for (let i = 0; i < 256; i += 1) await documents.insertOne({ _id: `s${i}`, value: randomBytes(96) });

const app = express();
app.use(express.json());
app.put('/secrets/:name', async (req, res) => {
  await documents.insertOne({ name: req.params.name, value: Buffer.from(String(req.body.value)), at: new Date() });
  res.json({ data: { name: req.params.name } });
});
app.post('/resolve', async (req, res) => {
  const doc = await documents.findOne({ _id: req.body.name });
  res.json({ data: { name: doc?._id } });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
server.keepAliveTimeout = 65_000;

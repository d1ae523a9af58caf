// `nx run openapi-document:build`: writes docs/openapi.json, the committed copy of the
// document the gateway serves, and docs/manifest.schema.json (a unit test fails when a
// committed copy differs).
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { serializedManifestSchema, serializedOpenApiDocument } from './openapi-document.ts';

for (const [file, text] of [['openapi.json', serializedOpenApiDocument()], ['manifest.schema.json', serializedManifestSchema()]] as const) {
  const target = resolve(import.meta.dirname, '..', '..', '..', 'docs', file);
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}

// `nx run openapi-document:build`: writes docs/openapi.json, the committed copy of the
// document the gateway serves (a unit test fails when the two differ).
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { serializedOpenApiDocument } from './openapi-document.ts';

const target = resolve(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json');
writeFileSync(target, serializedOpenApiDocument());
console.log(`wrote ${target}`);

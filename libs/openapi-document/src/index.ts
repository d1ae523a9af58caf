export { buildOpenApiDocument, serializedOpenApiDocument, errorCodesOf, openApiPath, OPENAPI_DOCUMENT_PATH, type OpenApiDocument } from './openapi-document.ts';

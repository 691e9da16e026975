// LibreChat's own RAG API client code, run against Kilde (npm run test:platforms-live, part
// "librechat"). LIBRECHAT_DIR holds LibreChat's modules at their paths in its repository
// (api/server/services/Files/VectorDB/crud.js: uploadVectors, deleteVectors;
// api/app/clients/tools/util/fileSearch.js: the file_search tool) and their npm dependencies
// (axios, form-data, zod, @langchain/core, librechat-data-provider, jsonwebtoken). Only the imports
// that reach LibreChat's database, logger and auth service are replaced; the token is signed the way
// LibreChat's generateShortLivedToken signs it. Prints one JSON object with what each step got.
const Module = require('node:module');
const path = require('node:path');

const dir = process.env.LIBRECHAT_DIR;
const requireFromLibreChat = Module.createRequire(path.join(dir, 'package.json'));
const jwt = requireFromLibreChat('jsonwebtoken');

const logger = { debug() {}, info() {}, warn() {}, error() {} };
const auth = {
  // LibreChat's generateShortLivedToken (packages/api/src/crypto/jwt.ts).
  generateShortLivedToken: (userId, expireIn = '5m') =>
    jwt.sign({ id: userId }, process.env.JWT_SECRET, { expiresIn: expireIn, algorithm: 'HS256' }),
  logAxiosError: ({ error, message }) => {
    calls.errors.push(`${message}: ${error.response?.status ?? ''} ${error.message}`);
  },
};
const stubs = {
  '@librechat/data-schemas': { logger },
  '@librechat/api': auth,
  '~/server/services/AuthService': auth,
  '~/server/services/Files/permissions': { filterFilesByAgentAccess: async ({ files }) => files },
  '~/models/File': { getFiles: async () => [] },
};
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request in stubs) return `stub:${request}`;
  return resolve.call(this, request, ...rest);
};
for (const [name, exports] of Object.entries(stubs)) {
  const m = new Module(`stub:${name}`);
  m.exports = exports;
  m.loaded = true;
  Module._cache[`stub:${name}`] = m;
}

const calls = { errors: [] };
const { uploadVectors, deleteVectors } = require(
  path.join(dir, 'api/server/services/Files/VectorDB/crud.js'),
);
const { createFileSearchTool } = require(path.join(dir, 'api/app/clients/tools/util/fileSearch.js'));

const req = (id) => ({ user: { id, role: 'USER' } });
const file = (p, name) => ({
  path: p,
  size: require('node:fs').statSync(p).size,
  originalname: name,
  mimetype: 'application/pdf',
});

async function search(userId, files, query, entity_id) {
  const t = await createFileSearchTool({ req: req(userId), files, entity_id });
  const msg = await t.invoke({ id: 'call-1', name: 'file_search', args: { query }, type: 'tool_call' });
  return { content: String(msg.content), artifact: msg.artifact ?? null };
}

(async () => {
  const pdf = process.env.PDF_PATH;
  const out = {};
  out.upload = await uploadVectors({
    req: req('lc-alice'),
    file: file(pdf, 'projects.pdf'),
    file_id: 'lc-file-a',
  });
  out.uploadShared = await uploadVectors({
    req: req('lc-alice'),
    file: file(pdf, 'projects.pdf'),
    file_id: 'lc-file-agent',
    entity_id: 'agent-1',
    storageMetadata: { source: 'local' },
  });
  const files = [{ file_id: 'lc-file-a', filename: 'projects.pdf' }];
  out.alice = await search('lc-alice', files, 'Cassiopeia cold room samples temperature');
  out.bob = await search('lc-bob', files, 'Cassiopeia cold room samples temperature');
  out.bobViaAgent = await search(
    'lc-bob',
    [{ file_id: 'lc-file-agent', filename: 'projects.pdf' }],
    'Cassiopeia cold room samples temperature',
    'agent-1',
  );
  const deleted = await deleteVectors(req('lc-alice'), { embedded: true, file_id: 'lc-file-a' });
  out.deleteStatus = deleted?.status ?? null;
  out.deleteBody = deleted?.data ?? null;
  out.afterDelete = await search('lc-alice', files, 'Cassiopeia cold room samples temperature');
  // Deleting it again: Kilde answers 404, which LibreChat takes as already deleted (no throw).
  out.deleteAgain = await deleteVectors(req('lc-alice'), { embedded: true, file_id: 'lc-file-a' })
    .then((r) => r?.status ?? 'resolved')
    .catch((e) => `threw: ${e.message}`);
  out.errors = calls.errors;
  console.log(JSON.stringify(out));
})().catch((err) => {
  console.log(JSON.stringify({ fatal: err.message, errors: calls.errors }));
  process.exit(1);
});

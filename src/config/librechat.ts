import { documentedAs, optionalString, string } from './fields.js';

/**
 * LibreChat's RAG API contract (docs/librechat.md): the routes of `danny-avila/rag_api` that
 * LibreChat calls, mounted on `ingest`, `retrieve` and `all` only when the shared secret is set.
 */
const secret = optionalString(
  "LibreChat's `JWT_SECRET`. Set, it mounts LibreChat's RAG API routes (`POST /embed`, `POST /text`, `DELETE /documents` on `ingest`; `POST /query`, `POST /query_multiple`, `GET /documents`, `GET /documents/{id}/context`, `GET /ids` on `retrieve`; all of them on `all`), which admit only an HS256 JWT signed with it (`Authorization: Bearer`, `exp` required); unset, none of them exists (404). At least 16 characters. See docs/librechat.md.",
);

const prefix = string(
  'librechat_',
  "Prefix of the collections LibreChat's routes read and write: a file goes to `<prefix><entity_id>` when LibreChat sends an `entity_id` (an agent's files), else to `<prefix><id>` with the user id of the JWT; a query reads those two only, and `DELETE /documents` deletes only files that are in such collections. Not empty; letters, digits, `_`, `-`, `.`; keep other tenants' collection names from starting with it.",
);

export const librechatPiece = {
  LIBRECHAT_JWT_SECRET: documentedAs(
    secret.refine((v) => v === undefined || v.length >= 16, 'must have at least 16 characters'),
    secret,
  ),
  LIBRECHAT_COLLECTION_PREFIX: documentedAs(
    prefix.refine(
      (v) => /^[\p{L}\p{N}_][\p{L}\p{M}\p{N}_.-]{0,63}$/u.test(v),
      'must start with a letter, digit or "_" and hold only letters, digits, "_", "-" and "." (at most 64 characters)',
    ),
    prefix,
  ),
};

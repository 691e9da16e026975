"""The reference ingestion path's own library, Haystack's QdrantDocumentStore (qdrant-haystack),
driven by test/interop/haystack-interop.ts: one JSON request on stdin, one JSON answer on stdout.

  write   writes documents as the reference ingestion path does (named vectors text-dense and
          text-sparse, payload {content, meta}, per-tenant HNSW, keyword indexes)
  read    every document of one tenant (meta.collection_name), as the library reads them back
  query   dense query of one tenant (the reference retrieval query shape: filter on the tenant)
  hybrid  dense + sparse query of one tenant, fused by Qdrant (RRF)
"""

import json
import sys

from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore


def store(req, create=False):
    return QdrantDocumentStore(
        url=req["url"],
        index=req["index"],
        embedding_dim=req["dim"],
        use_sparse_embeddings=True,
        sparse_idf=True,
        similarity="cosine",
        progress_bar=False,
        recreate_index=create,
        hnsw_config={"m": 0, "payload_m": 16} if create else None,
        payload_fields_to_index=[
            {"field_name": "meta.collection_name", "field_schema": {"type": "keyword", "is_tenant": True}},
            {"field_name": "meta.collection_type", "field_schema": "keyword"},
            {"field_name": "meta.file_id", "field_schema": "keyword"},
            {"field_name": "meta.ingest_version", "field_schema": "keyword"},
        ]
        if create
        else None,
    )


def tenant(name):
    return {"field": "meta.collection_name", "operator": "==", "value": name}


def out(docs):
    return [
        {"id": d.id, "content": d.content, "meta": d.meta, "score": d.score}
        for d in docs
    ]


def main():
    req = json.load(sys.stdin)
    op = req["op"]
    if op == "write":
        s = store(req, create=True)
        docs = [
            Document(
                id=d["id"],
                content=d["content"],
                meta=d["meta"],
                embedding=d["embedding"],
                sparse_embedding=SparseEmbedding(indices=d["sparse"]["indices"], values=d["sparse"]["values"]),
            )
            for d in req["docs"]
        ]
        n = s.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        print(json.dumps({"written": n}))
    elif op == "read":
        s = store(req)
        print(json.dumps(out(s.filter_documents(filters=tenant(req["collection"])))))
    elif op == "query":
        s = store(req)
        docs = s._query_by_embedding(
            query_embedding=req["embedding"], filters=tenant(req["collection"]), top_k=req["top_k"]
        )
        print(json.dumps(out(docs)))
    elif op == "hybrid":
        s = store(req)
        docs = s._query_hybrid(
            query_embedding=req["embedding"],
            query_sparse_embedding=SparseEmbedding(indices=req["sparse"]["indices"], values=req["sparse"]["values"]),
            filters=tenant(req["collection"]),
            top_k=req["top_k"],
        )
        print(json.dumps(out(docs)))
    else:
        raise SystemExit(f"unknown op {op}")


if __name__ == "__main__":
    main()

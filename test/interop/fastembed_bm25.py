"""fastembed's `Qdrant/bm25` (the sparse model of the reference ingestion path), offline: the model
repository holds only stop-word lists, so they are supplied from Kilde's vendored copy
(`specific_model_path`) instead of being fetched from a hub. Reads {language, model_dir, documents,
queries} on stdin; writes the document and query vectors as {indices, values} on stdout."""

import json
import sys

from fastembed import SparseTextEmbedding


def main():
    req = json.load(sys.stdin)
    model = SparseTextEmbedding(
        model_name="Qdrant/bm25",
        language=req["language"],
        specific_model_path=req["model_dir"],
        local_files_only=True,
    )
    as_json = lambda e: {"indices": [int(i) for i in e.indices], "values": [float(v) for v in e.values]}
    docs = [as_json(e) for e in model.embed(req["documents"])]
    queries = [as_json(e) for e in model.query_embed(req["queries"])]
    print(json.dumps({"documents": docs, "queries": queries}))


if __name__ == "__main__":
    main()

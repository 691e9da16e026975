"""Qdrant's recall@10 on the real vectors of `bench:search --vectors` (docs/ann-recall.md).

    .tmp/models-venv/bin/python bench/ann-qdrant.py --vectors .tmp/ann/real4 --chunks 200000 \
      --url http://127.0.0.1:6399

Against a running Qdrant (a real one: `QDRANT__SERVICE__HTTP_PORT=6399 QDRANT__SERVICE__GRPC_PORT=6400
QDRANT__STORAGE__STORAGE_PATH=.tmp/ann/qdrant qdrant`), with the settings docs/qdrant.md gives as
LanceDB's equivalents: per-tenant graphs as Kilde creates them (`hnsw_config: {m: 0, payload_m: 16,
ef_construct: 100}`, a tenant keyword index), 8-bit scalar quantization, and searches with `hnsw_ef`
400 and rescoring with oversampling 2 (and without either, for comparison). The rows and tenants are
bench/search.ts's: row n is `PREFIX.docs.f32`'s n-th vector on tenant `tenant-{n // 20 % 10}`; query
i is `PREFIX.queries.f32`'s i-th on `tenant-{i % 10}`. Recall@10 is against Qdrant's own exact
search (`exact: true`) with the same filter. Prints one line per setting.
"""

import argparse
import json
import os
import time
import urllib.request

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--vectors", default=".tmp/ann/real4")
ap.add_argument("--chunks", type=int, default=200_000)
ap.add_argument("--queries", type=int, default=200)
ap.add_argument("--tenants", type=int, default=10)
ap.add_argument("--url", default="http://127.0.0.1:6399")
ap.add_argument("--collection", default="ann_recall")
args = ap.parse_args()
DIM = 384


def rows(path: str) -> np.ndarray:
    v = np.fromfile(path if os.path.exists(path) else f"{path}.part", dtype="<f4")
    return v[: len(v) // DIM * DIM].reshape(-1, DIM)


def call(method: str, path: str, body: object | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{args.url}{path}", data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as res:
        return json.loads(res.read())


docs = rows(f"{args.vectors}.docs.f32")[: args.chunks]
queries = rows(f"{args.vectors}.queries.f32")[: args.queries]
name = args.collection
existing = {c["name"] for c in call("GET", "/collections")["result"]["collections"]}
have = call("POST", f"/collections/{name}/points/count", {"exact": True})["result"]["count"] if name in existing else -1
if have > len(docs):
    call("DELETE", f"/collections/{name}")
    have = -1
if have < 0:
    call("PUT", f"/collections/{name}", {
        "vectors": {"size": DIM, "distance": "Cosine"},
        "hnsw_config": {"m": 0, "payload_m": 16, "ef_construct": 100},
        "quantization_config": {"scalar": {"type": "int8", "always_ram": True}},
    })
    call("PUT", f"/collections/{name}/index?wait=true", {"field_name": "tenant", "field_schema": {"type": "keyword", "is_tenant": True}})
    have = 0
if have < len(docs):
    # A kept collection with fewer points grows by the rows it lacks (ids are row numbers).
    t0 = time.time()
    for start in range(have, len(docs), 2000):
        points = [
            {"id": n, "vector": docs[n].tolist(), "payload": {"tenant": f"tenant-{n // 20 % args.tenants}"}}
            for n in range(start, min(start + 2000, len(docs)))
        ]
        call("PUT", f"/collections/{name}/points?wait=true", {"points": points})
    print(f"{len(docs) - have} points written in {time.time() - t0:.0f} s", flush=True)
t0 = time.time()
while True:
    info = call("GET", f"/collections/{name}")["result"]
    if info["status"] == "green":
        break
    time.sleep(5)
print(f"collection green after {time.time() - t0:.0f} more s: {info.get('indexed_vectors_count')} vectors indexed, {info.get('segments_count')} segments", flush=True)


def search(q: int, params: dict) -> tuple[list[int], float]:
    body = {
        "query": queries[q].tolist(),
        "filter": {"must": [{"key": "tenant", "match": {"value": f"tenant-{q % args.tenants}"}}]},
        "limit": 10,
        "params": params,
    }
    t = time.perf_counter()
    pts = call("POST", f"/collections/{name}/points/query", body)["result"]["points"]
    return [p["id"] for p in pts], (time.perf_counter() - t) * 1000


exact = []
exact_ms = []
for q in range(len(queries)):
    ids, ms = search(q, {"exact": True})
    exact.append(set(ids))
    exact_ms.append(ms)
print(f"exact (exact: true): p50 {np.percentile(exact_ms, 50):.1f} ms", flush=True)
for label, params in (
    ("hnsw_ef 100, no rescore", {"hnsw_ef": 100, "quantization": {"rescore": False}}),
    ("hnsw_ef 100, rescore, oversampling 2", {"hnsw_ef": 100, "quantization": {"rescore": True, "oversampling": 2.0}}),
    ("hnsw_ef 400, no rescore", {"hnsw_ef": 400, "quantization": {"rescore": False}}),
    ("hnsw_ef 400, rescore, oversampling 2 (LanceDB's default)", {"hnsw_ef": 400, "quantization": {"rescore": True, "oversampling": 2.0}}),
):
    found = 0
    worst = 1.0
    lat = []
    for q in range(len(queries)):
        ids, ms = search(q, params)
        hit = len(exact[q] & set(ids))
        found += hit
        worst = min(worst, hit / max(1, len(exact[q])))
        lat.append(ms)
    wanted = sum(len(e) for e in exact)
    print(f"{label}: recall@10 {found / wanted:.3f}, worst query {worst:.1f}, p50 {np.percentile(lat, 50):.1f} ms (load {os.getloadavg()[0]:.1f})", flush=True)

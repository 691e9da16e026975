"""Real passages for the ANN recall run (`bench:search --vectors`; docs/ann-recall.md).

    python3 bench/ann-corpus.py --out .tmp/ann/corpus [--limit 1000000] [--source DIR ...]

Writes OUT.docs.txt (one passage a line) and OUT.queries.txt, from real text only, deduplicated
(case and spacing folded), in a fixed shuffled order so that any prefix (the first 100k) mixes every
source:

- SciFact (BEIR, CC BY-NC 2.0): every abstract's sentences and titles;
- the Danish citizenship textbook's sentences (educational use; the model is English-only, so these
  are a small foreign-language minority, as in a mixed collection);
- every `--source DIR` (default: `node_modules` and the `.tmp/*-venv` Python environments, plus
  whatever `.tmp/ann/deb/` holds unpacked from Debian documentation packages): prose from
  Markdown, reStructuredText, plain-text and HTML documentation, and Python docstrings, each cut
  into sentences and short paragraphs. Code blocks, tables, URLs and lines that look like code are
  dropped.

The Debian documentation is fetched and unpacked beforehand:
    cd .tmp/ann/deb && apt-get download linux-doc-6.1 python3.11-doc perl-doc && for f in *.deb; do dpkg -x $f x; done
    find x \( -name '*.rst.gz' -o -name '*.txt.gz' -o -name '*.pod.gz' \) -exec gunzip -q {} +
The 1M run's further sets came from more packages, fetched and unpacked the same way (only the
Debian handbook's en-US folder kept): `.tmp/ann/deb2` openjdk-17-doc postgresql-doc-15
python-django-doc ruby3.1-doc git-doc debian-reference-en; `.tmp/ann/deb3` rust-doc
qtbase5-doc-html erlang-doc debian-handbook python-scipy-doc python-pandas-doc python-sklearn-doc
libboost1.81-doc octave-doc nodejs-doc libreoffice-help-en-us vim-doc ghc-doc sphinx-doc gnuplot-doc
and python3-{sympy,scipy,numpy,pandas,matplotlib,sklearn,twisted,astropy,networkx,sqlalchemy,
statsmodels,django} (their docstrings); `.tmp/ann/deb4` racket-doc gimp-help-en lilypond-doc-html
cmake-doc exim4-doc-html postfix-doc sqlite3-doc python-biopython-doc python-statsmodels-doc
python-sqlalchemy-doc python-skimage-doc zsh-doc maxima-doc bind9-doc debian-policy
developers-reference debian-faq kicad-doc-en python3-kubernetes python3-nova.
What the node_modules and .tmp/*-venv folders hold depends on the checkout (2026-11-27: the
interop, models, otel and Open WebUI environments): the set is real and deduplicated, not fixed.
`--max-chars 200 --without-scifact` writes the short set the recall figures use.

`--exclude FILE` (repeatable) writes a further set from new sources only: any passage of FILE (an
earlier set's docs or queries, case and spacing folded) is left out, so the earlier set, already
embedded, stays as it is and the new one extends it. The 1M run's second and third sets, from more
Debian documentation packages (see docs/ann-recall.md for the list):
    python3 bench/ann-corpus.py --max-chars 200 --without-scifact --exclude .tmp/ann/short.docs.txt \\
      --exclude .tmp/ann/short.queries.txt --source .tmp/ann/deb2/x --source .tmp/ann/deb3/x --out .tmp/ann/short2
    (the same with short2's files excluded too and --source .tmp/ann/deb4/x --out .tmp/ann/short3)

The queries are SciFact's train questions interleaved with as many passages held out of the corpus
(sentences of the same sources that never enter OUT.docs.txt), so recall is measured for question-
shaped and passage-shaped queries alike. Only text is written: nothing here is redistributed, and
the vectors stay in `.tmp/ann/` (ignored).
"""

import argparse
import glob
import hashlib
import html
import json
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("KILDE_BENCH_DATA", os.path.join(ROOT, "..", "shared", "data"))

ap = argparse.ArgumentParser()
ap.add_argument("--out", default=os.path.join(ROOT, ".tmp/ann/corpus"))
ap.add_argument("--limit", type=int, default=1_200_000)
ap.add_argument("--held-out", type=int, default=809)
ap.add_argument("--source", action="append")
ap.add_argument("--max-chars", type=int, default=0)
ap.add_argument("--without-scifact", action="store_true")
ap.add_argument("--exclude", action="append", default=[])
args = ap.parse_args()

SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
CODEY = re.compile(r"[{}<>=;\\|]|\(\)|::|->|=>|__|\$\(|^\W|\bdef\b|\breturn\b|\bimport\b|https?:|www\.|\.(js|ts|py|md)\b")
WORD = re.compile(r"[A-Za-zÆØÅæøå]{2,}")


def good(s: str) -> bool:
    """A prose sentence: 40–400 characters, six words or more, mostly letters, nothing code-like."""
    if not 40 <= len(s) <= 400 or CODEY.search(s):
        return False
    words = WORD.findall(s)
    if len(words) < 6:
        return False
    letters = sum(c.isalpha() or c == " " for c in s)
    return letters / len(s) > 0.85 and s[0].isupper()


def passages(paragraph: str):
    """The sentences of one paragraph, and the paragraph itself when it is a short run of sentences."""
    p = " ".join(paragraph.split())
    if not p:
        return
    sents = [s for s in SENT.split(p)]
    for s in sents:
        if good(s):
            yield s
    if 2 <= len(sents) <= 4 and all(good(s) for s in sents) and len(p) <= 600:
        yield p


MD_DROP = re.compile(r"^\s*(\||#|>|!\[|<|\[!|```|~~~|\.\. |:|-{3,}|={3,}|\*{3,}|\s{4})")
MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
TAGS = re.compile(r"<[^>]+>")


def markdown_paragraphs(text: str):
    text = re.sub(r"```.*?```|~~~.*?~~~", "\n\n", text, flags=re.S)
    for block in re.split(r"\n\s*\n", text):
        lines = [l for l in block.split("\n") if l.strip() and not MD_DROP.match(l)]
        if not lines:
            continue
        b = " ".join(re.sub(r"^\s*([-*+]|\d+\.)\s+", "", l) for l in lines)
        b = MD_LINK.sub(r"\1", b)
        b = TAGS.sub(" ", b)
        b = re.sub(r"[`*_]{1,3}", "", b)
        b = re.sub(r":[a-z]+:", "", b)  # rst roles
        yield html.unescape(b)


def html_paragraphs(text: str):
    text = re.sub(r"<(script|style|pre|code|table)\b.*?</\1>", " ", text, flags=re.S | re.I)
    for m in re.finditer(r"<(p|dd|li)\b[^>]*>(.*?)</\1>", text, flags=re.S | re.I):
        yield html.unescape(TAGS.sub("", m.group(2)))


DOCSTRING = re.compile(r'"""(.*?)"""', re.S)


def docstring_paragraphs(text: str):
    for m in DOCSTRING.finditer(text):
        yield from markdown_paragraphs(m.group(1))


def files_of(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("test", "tests", "__pycache__", ".git")]
        for f in filenames:
            low = f.lower()
            if low.startswith(("changelog", "history", "license", "licence", "notice", "authors")):
                continue
            if low.endswith((".md", ".markdown", ".rst", ".txt", ".py", ".html", ".pod", ".pm")):
                yield os.path.join(dirpath, f)


def paragraphs_of(path: str):
    try:
        if os.path.getsize(path) > 4_000_000:
            return
        with open(path, encoding="utf-8", errors="strict") as fh:
            text = fh.read()
    except (UnicodeDecodeError, OSError):
        return
    low = path.lower()
    if low.endswith(".py"):
        yield from docstring_paragraphs(text)
    elif low.endswith(".html"):
        yield from html_paragraphs(text)
    elif low.endswith((".pod", ".pm")):
        yield from markdown_paragraphs(re.sub(r"^=\w+.*$|[A-Z]<([^>]*)>", lambda m: m.group(1) or "", text, flags=re.M))
    else:
        yield from markdown_paragraphs(text)


seen: set[bytes] = set()
by_source: dict[str, list[str]] = {}


def fold(text: str) -> bytes:
    """The deduplication key: case and spacing folded."""
    return hashlib.blake2b(" ".join(text.lower().split()).encode(), digest_size=12).digest()


def add(source: str, text: str) -> None:
    key = fold(text)
    if key in seen:
        return
    seen.add(key)
    by_source.setdefault(source, []).append(text)


# `--exclude FILE`: passages (and queries) of an earlier set are never written again, so that a second
# set extends the first without repeating it (the first set's order and vectors stay as they are).
excluded: set[bytes] = set()
for path in args.exclude:
    with open(path, encoding="utf-8") as fh:
        excluded.update(fold(line) for line in fh if line.strip())


with open(os.path.join(DATA, "scifact", "corpus.jsonl"), encoding="utf-8") as fh:
    for line in fh:
        if not line.strip():
            continue
        d = json.loads(line)
        add("scifact", d["title"])
        for s in SENT.split(" ".join(d["text"].split())):
            if len(s) > 20:
                add("scifact", s)
for path in sorted(glob.glob(os.path.join(DATA, "da-citizenship", "corpus", "*.md"))):
    with open(path, encoding="utf-8") as fh:
        for p in markdown_paragraphs(fh.read()):
            for s in SENT.split(" ".join(p.split())):
                if 40 <= len(s) <= 400:
                    add("danish", s)

sources = args.source or [
    os.path.join(ROOT, "node_modules"),
    *sorted(glob.glob(os.path.join(ROOT, ".tmp", "*-venv"))),
    os.path.join(ROOT, ".tmp", "ann", "deb", "x"),
]
for root in sources:
    name = os.path.basename(root.rstrip("/"))
    n = 0
    for path in files_of(root):
        for p in paragraphs_of(path):
            for s in passages(p):
                add(name, s)
                n += 1
    print(f"{root}: {n} passages before deduplication", file=sys.stderr)

if excluded:
    by_source = {name: [p for p in items if fold(p) not in excluded] for name, items in by_source.items()}
for name, items in by_source.items():
    print(f"{name}: {len(items)} distinct passages", file=sys.stderr)

rng = random.Random(33)
held: list[str] = []
pool: list[str] = []
for name in sorted(by_source):
    items = by_source[name]
    rng.shuffle(items)
    if name not in ("scifact", "danish"):
        take = args.held_out * len(items) // max(1, sum(len(v) for k, v in by_source.items() if k not in ("scifact", "danish")))
        held.extend(items[:take])
        items = items[take:]
    pool.extend(items)
rng.shuffle(pool)
rng.shuffle(held)
pool = pool[: args.limit]

with open(os.path.join(DATA, "scifact", "queries-train.jsonl"), encoding="utf-8") as fh:
    questions = [json.loads(l)["text"] for l in fh if l.strip()]
queries = [q for pair in zip(questions, held) for q in pair]

if args.max_chars or args.without_scifact:
    # The short set: passages of at most --max-chars (the faster to embed), without SciFact's (whose
    # vectors bench/search-vectors.ts wrote through Kilde's own provider); the queries are then the
    # held-out passages alone, the questions coming with SciFact's vectors (`ann-embed.py --join`).
    drop = {" ".join(p.lower().split()) for p in by_source["scifact"]} if args.without_scifact else set()
    keep = lambda p: (not args.max_chars or len(p) <= args.max_chars) and " ".join(p.lower().split()) not in drop
    pool = [p for p in pool if keep(p)]
    queries = [q for q in held if keep(q)]
with open(f"{args.out}.docs.txt", "w", encoding="utf-8") as fh:
    fh.writelines(p.replace("\n", " ") + "\n" for p in pool)
with open(f"{args.out}.queries.txt", "w", encoding="utf-8") as fh:
    fh.writelines(q.replace("\n", " ") + "\n" for q in queries)
print(f"{args.out}.docs.txt: {len(pool)} passages; {args.out}.queries.txt: {len(queries)} queries", file=sys.stderr)

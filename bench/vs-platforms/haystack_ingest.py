"""The reference deployment's ingestion (Haystack converters, DocumentSplitter, a dense embedder,
fastembed's `Qdrant/bm25` sparse embedder, DocumentWriter into a real Qdrant through
QdrantDocumentStore in the contracts' layout), for `npm run bench:vs-platforms`
(bench/vs-platforms.ts):

    .tmp/interop-venv/bin/python bench/vs-platforms/haystack_ingest.py \
        <files.json> <qdrant url> <collection> <stop-words dir> <per-file|bulk>

`per-file` runs the indexing pipeline once per file, as the reference ingestion service does for
each `PUT /api/v1/ingest`; `bulk` runs it over 128 files at a time (Haystack's best case). A file
the pipeline fails on is listed in `failed` (a bulk batch that fails is run again file by file). Converters:
TextFileToDocument (.txt), MarkdownToDocument (.md), PyPDFToDocument (.pdf), DOCXToDocument
(.docx), routed by FileTypeRouter. DocumentSplitter by word, 300 words with 60 of overlap (about
Kilde's 400 and 80 tokens: Haystack's token mode needs tiktoken's encoding from the network).
The dense embedder is zero-cost (one fixed unit vector per text, as on Kilde's side); the sparse one
is fastembed's `Qdrant/bm25` with Kilde's vendored stop words (its model holds nothing else), the
same BM25 Kilde writes. Prints `{"ready": true}` once the pipeline is built and the collection made
(the bench counts Qdrant's CPU and requests from there), then one JSON line: files, chunks, pages (of PDFs), seconds, cpu (this
process, all threads, user + system), peakRss, and `stages`: seconds in each component, and its
CPU seconds (`<component>, CPU`).
"""

import contextlib
import dataclasses
import json
import mimetypes
import resource
import sys
import time
import warnings
from pathlib import Path

from fastembed import SparseTextEmbedding
from haystack import Document, Pipeline, component, tracing
from haystack.components.converters import (
    DOCXToDocument,
    MarkdownToDocument,
    PyPDFToDocument,
    TextFileToDocument,
)
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentSplitter
from haystack.components.routers import FileTypeRouter
from haystack.components.writers import DocumentWriter
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

# qdrant-client 1.20 warns that it is one minor version ahead of the 1.18 server; the REST calls it makes are in both.
warnings.filterwarnings('ignore', message='Qdrant client version')

files_path, url, index, stopwords, mode = sys.argv[1:6]
files = json.loads(Path(files_path).read_text())
DIM = 384
DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
mimetypes.add_type('text/markdown', '.md')
mimetypes.add_type(DOCX, '.docx')


@component
class ZeroCostEmbedder:
    """One fixed unit vector per document, as Kilde's side gets."""

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]):
        unit = [1.0] + [0.0] * (DIM - 1)
        return {'documents': [dataclasses.replace(d, embedding=unit) for d in documents]}


@component
class Bm25SparseEmbedder:
    """fastembed's Qdrant/bm25 over each chunk, as the reference ingestion path's sparse stage."""

    def __init__(self):
        self.model = SparseTextEmbedding(
            model_name='Qdrant/bm25', language='english', specific_model_path=stopwords, local_files_only=True
        )

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]):
        vectors = self.model.embed([d.content or '' for d in documents])
        return {
            'documents': [
                dataclasses.replace(d, sparse_embedding=SparseEmbedding(indices=e.indices.tolist(), values=e.values.tolist()))
                for d, e in zip(documents, vectors, strict=True)
            ]
        }


def document_store(create: bool) -> QdrantDocumentStore:
    return QdrantDocumentStore(
        url=url,
        index=index,
        embedding_dim=DIM,
        use_sparse_embeddings=True,
        sparse_idf=True,
        similarity='cosine',
        progress_bar=False,
        recreate_index=create,
        hnsw_config={'m': 0, 'payload_m': 16} if create else None,
        payload_fields_to_index=[
            {'field_name': 'meta.collection_name', 'field_schema': {'type': 'keyword', 'is_tenant': True}},
            {'field_name': 'meta.file_id', 'field_schema': 'keyword'},
        ]
        if create
        else None,
    )


class StageTimer(tracing.Tracer):
    """Seconds spent in each pipeline component (Haystack's own tracing hook: one span per run)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.current = None

    @contextlib.contextmanager
    def trace(self, operation_name, tags=None, parent_span=None):
        name = (tags or {}).get('haystack.component.name')
        start = time.perf_counter()
        cpu_start = time.process_time()
        try:
            yield _Span()
        finally:
            if name:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                cpu = f'{name}, CPU'
                self.seconds[cpu] = self.seconds.get(cpu, 0.0) + time.process_time() - cpu_start

    def current_span(self):
        return None


class _Span(tracing.Span):
    def set_tag(self, key, value):
        pass


def rss_now() -> int:
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) * 1024
    return 0


t_start = time.perf_counter()
store = document_store(True)
p = Pipeline()
p.add_component('router', FileTypeRouter(mime_types=['text/plain', 'text/markdown', 'application/pdf', DOCX]))
p.add_component('txt', TextFileToDocument())
p.add_component('md', MarkdownToDocument(progress_bar=False))
p.add_component('pdf', PyPDFToDocument())
p.add_component('docx', DOCXToDocument())
p.add_component('join', DocumentJoiner())
p.add_component('split', DocumentSplitter(split_by='word', split_length=300, split_overlap=60))
p.add_component('dense', ZeroCostEmbedder())
p.add_component('sparse', Bm25SparseEmbedder())
p.add_component('write', DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
p.connect('router.text/plain', 'txt.sources')
p.connect('router.text/markdown', 'md.sources')
p.connect('router.application/pdf', 'pdf.sources')
p.connect(f'router.{DOCX}', 'docx.sources')
for conv in ('txt', 'md', 'pdf', 'docx'):
    p.connect(f'{conv}.documents', 'join.documents')
p.connect('join.documents', 'split.documents')
p.connect('split.documents', 'dense.documents')
p.connect('dense.documents', 'sparse.documents')
p.connect('sparse.documents', 'write.documents')
p.warm_up()
startup = time.perf_counter() - t_start
# The store makes its collection on first use: made here (one count), and the bench reads Qdrant's
# counters from here on.
store.count_documents()
print(json.dumps({'ready': True}), flush=True)

pages = 0
for f in files:
    if f.endswith('.pdf'):
        from pypdf import PdfReader

        pages += len(PdfReader(f).pages)

timer = StageTimer()
tracing.enable_tracing(timer)
base_rss = rss_now()
cpu0 = time.process_time()
t0 = time.perf_counter()
chunks = 0
failed: list[str] = []


def run(batch: list[str]) -> None:
    global chunks
    meta = [{'collection_name': 'bench', 'file_id': f, 'source': Path(f).name} for f in batch]
    out = p.run({'router': {'sources': batch, 'meta': meta}})
    chunks += out['write']['documents_written']


# A file the pipeline cannot take fails its run: per file, that file is counted as failed; in bulk
# (batches of 128 files), its batch is run again file by file so the others still count.
size = 1 if mode == 'per-file' else 128
for start in range(0, len(files), size):
    batch = files[start : start + size]
    try:
        run(batch)
    except Exception as e:  # noqa: BLE001
        if len(batch) == 1:
            failed.append(f'{Path(batch[0]).name}: {str(e).splitlines()[-1][:200]}')
            continue
        for f in batch:
            try:
                run([f])
            except Exception as e1:  # noqa: BLE001
                failed.append(f'{Path(f).name}: {str(e1).splitlines()[-1][:200]}')
seconds = time.perf_counter() - t0
cpu = time.process_time() - cpu0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(
    json.dumps(
        {
            'files': len(files),
            'chunks': chunks,
            'pages': pages,
            'seconds': seconds,
            'startup': startup,
            'cpu': cpu,
            'peakRss': peak,
            'baseRss': base_rss,
            'stages': timer.seconds,
            'failed': failed,
        }
    ),
    flush=True,
)

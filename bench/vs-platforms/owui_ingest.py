"""Open WebUI 0.12.4's own knowledge ingestion, in process, one file at a time, for
`npm run bench:vs-platforms` (bench/vs-platforms.ts):

    .tmp/owui-venv/bin/python bench/vs-platforms/owui_ingest.py <files.json> <work dir> [<webui.db>]

The optional third argument is a migrated copy of Open WebUI's SQL database: copied in before the
imports when it exists (a fresh one runs ~150 migrations, a minute of a loaded machine's CPU), and
written there after them when it does not.

Each file goes the way an upload into a knowledge base goes in Open WebUI (routers/files.py, then
routers/retrieval.py `index_file`): its default `Loader` (no content extraction engine: pypdf for
PDF, python-docx for DOCX, TextLoader for .txt/.md, then ftfy), the metadata `index_file` builds,
`save_docs_to_vector_db` into the file's own collection `file-<id>` (its default splitters: the
Markdown-header splitter, then RecursiveCharacterTextSplitter 1000/100 characters; its default
embedding path, sentence-transformers, with a zero-cost model answering one fixed unit vector per
text; its default vector store, embedded Chroma under DATA_DIR), then the knowledge link: the
file's chunks read back from `file-<id>` and `save_docs_to_vector_db` into the knowledge
collection, as `index_file(collection_name=<knowledge id>)` does. Open WebUI's SQL bookkeeping
(the file row, its content, the knowledge link) is left out, which only flatters it.

Prints one JSON line: files, chunks (in the knowledge collection), pages (of PDFs), `seconds`
(the ingestion alone), `importSeconds` (Open WebUI's modules loaded: its server's start-up, not
counted in `seconds`), `cpu` (CPU seconds of the ingestion, user + system, all threads),
`peakRss` (the process's peak, imports included), `baseRss` (its RSS before the first file) and
`stages`: seconds in the loader, in Chroma's calls, in the file's own collection (splitting,
embedding and Chroma) and in the knowledge link (read back, split, embed, Chroma again), each also
in CPU seconds (`<stage>, CPU`).
"""

import asyncio
import json
import os
import resource
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

files = json.loads(Path(sys.argv[1]).read_text())
work = Path(sys.argv[2])
DIM = 384

owui = Path(__file__).resolve().parents[2] / '.tmp/owui-venv/lib/python3.11/site-packages/open_webui'
for candidate in Path(sys.prefix).glob('lib/python3*/site-packages/open_webui'):
    owui = candidate
(work / 'data').mkdir(parents=True, exist_ok=True)
os.environ.update(
    DATA_DIR=str(work / 'data'),
    FRONTEND_BUILD_DIR=str(owui / 'frontend'),
    WEBUI_SECRET_KEY='bench-secret',
    ENABLE_PERSISTENT_CONFIG='false',
    OFFLINE_MODE='true',
    HF_HUB_OFFLINE='1',
    TRANSFORMERS_OFFLINE='1',
    ANONYMIZED_TELEMETRY='false',
    DO_NOT_TRACK='true',
    SCARF_NO_ANALYTICS='true',
    RAG_EMBEDDING_MODEL_AUTO_UPDATE='false',
    GLOBAL_LOG_LEVEL='WARNING',
)

template = Path(sys.argv[3]) if len(sys.argv) > 3 else None
if template and template.exists():
    shutil.copyfile(template, work / 'data' / 'webui.db')
t_import = time.perf_counter()
import logging  # noqa: E402

import numpy as np  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from open_webui.config import DEFAULT_CONFIG  # noqa: E402
from open_webui.retrieval.vector.factory import get_vector_db_client  # noqa: E402
from open_webui.routers import retrieval  # noqa: E402
from open_webui.utils.misc import calculate_sha256_string  # noqa: E402

logging.disable(logging.WARNING)
import_seconds = time.perf_counter() - t_import
if template and not template.exists():
    shutil.copyfile(work / 'data' / 'webui.db', template)

# The retrieval settings a fresh Open WebUI starts with (what Config.get_many answers untouched).
config = {key: DEFAULT_CONFIG.get(key) for key in retrieval.RETRIEVAL_CONFIG_KEYS.values()}
assert config['rag.embedding_engine'] == '', config['rag.embedding_engine']
assert config['rag.content_extraction_engine'] == '', config['rag.content_extraction_engine']


class ZeroCostModel:
    """Stands where Open WebUI's SentenceTransformer model stands: one fixed unit vector per text."""

    def __init__(self):
        self.unit = np.zeros(DIM, dtype=np.float32)
        self.unit[0] = 1.0

    def encode(self, texts, batch_size=32, **_):
        if isinstance(texts, str):
            return self.unit.copy()
        return np.tile(self.unit, (len(texts), 1))


loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()


class _State:
    ef = ZeroCostModel()
    main_loop = loop


class _App:
    state = _State()


class _Request:
    app = _App()


request = _Request()
user = None
knowledge_id = str(uuid.uuid4())
CONTENT_TYPES = {
    'pdf': 'application/pdf',
    'docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'md': 'text/markdown',
    'txt': 'text/plain',
}


stages = {'loader': 0.0, 'file collection': 0.0, 'knowledge link': 0.0, 'Chroma calls, in both': 0.0}
# The same stages in CPU seconds (the process's, all threads: Chroma's included).
cpu_stages = dict.fromkeys(stages, 0.0)


def timed(stage, fn):
    def run(*args, **kwargs):
        start = time.perf_counter()
        cpu_start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            stages[stage] += time.perf_counter() - start
            cpu_stages[stage] += time.process_time() - cpu_start

    return run


# Chroma's own calls, timed where save_docs_to_vector_db and the knowledge link make them.
_client = get_vector_db_client()
for _name in ('insert', 'query', 'has_collection'):
    setattr(_client, _name, timed('Chroma calls, in both', getattr(_client, _name)))


def ingest(path: str) -> int:
    filename = os.path.basename(path)
    file_id = str(uuid.uuid4())
    content_type = CONTENT_TYPES.get(filename.rsplit('.', 1)[-1].lower(), 'application/octet-stream')
    meta = {'name': filename, 'content_type': content_type, 'size': os.path.getsize(path)}
    # index_file(file_id): the loader, then the file's own collection.
    loader = retrieval.build_loader_from_config(config)
    loader.metadata = {'file_id': file_id, 'file_name': filename, 'file_content_type': content_type}
    docs = timed('loader', loader.load)(filename, content_type, path)
    docs = [
        Document(
            page_content=doc.page_content,
            metadata={
                **retrieval.filter_file_metadata(meta),
                **retrieval.filter_metadata(doc.metadata),
                'name': filename,
                'created_by': 'bench',
                'file_id': file_id,
                'source': filename,
            },
        )
        for doc in docs
    ]
    text_content = ' '.join(doc.page_content for doc in docs)
    file_hash = calculate_sha256_string(text_content)
    metadata = {'file_id': file_id, 'name': filename, 'hash': file_hash}
    timed('file collection', retrieval.save_docs_to_vector_db)(
        request, docs=docs, collection_name=f'file-{file_id}', config=config, metadata=metadata, add=False, user=user
    )
    # index_file(file_id, collection_name=<knowledge>): the file's chunks, read back, into the knowledge collection.
    link_start = time.perf_counter()
    link_cpu = time.process_time()
    client = get_vector_db_client()
    stored = client.query(collection_name=f'file-{file_id}', filter={'file_id': file_id})
    chunks = [
        Document(page_content=stored.documents[0][i], metadata=stored.metadatas[0][i]) for i in range(len(stored.ids[0]))
    ]
    retrieval.save_docs_to_vector_db(
        request, docs=chunks, collection_name=knowledge_id, config=config, metadata=metadata, add=True, user=user
    )
    stages['knowledge link'] += time.perf_counter() - link_start
    cpu_stages['knowledge link'] += time.process_time() - link_cpu
    return len(chunks)


def pdf_pages(path: str) -> int:
    if not path.endswith('.pdf'):
        return 0
    from pypdf import PdfReader

    return len(PdfReader(path).pages)


def rss_now() -> int:
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) * 1024
    return 0


pages = sum(pdf_pages(p) for p in files)
base_rss = rss_now()
cpu0 = time.process_time()
t0 = time.perf_counter()
chunks = 0
failed = []
for p in files:
    try:
        chunks += ingest(p)
    except Exception as e:  # noqa: BLE001 - a file Open WebUI refuses is counted, as its upload would fail
        failed.append(f'{os.path.basename(p)}: {str(e).splitlines()[-1][:200] if str(e) else type(e).__name__}')
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
            'importSeconds': import_seconds,
            'cpu': cpu,
            'peakRss': peak,
            'baseRss': base_rss,
            'stages': {**stages, **{f'{k}, CPU': v for k, v in cpu_stages.items()}},
            'failed': failed,
        }
    ),
    flush=True,
)
os._exit(0)

import type { IngestSuccessBody } from './jobs/job.js';
import type { IngestOutcome } from './service.js';

/** The success body of `PUT /api/v1/ingest`, also a done job's `result`: one shape, one place. */
export function successBody(outcome: IngestOutcome): IngestSuccessBody {
  return {
    status: true,
    collection_name: outcome.collectionName,
    chunks_count: outcome.chunksCount,
    extraction: outcome.extraction,
  };
}

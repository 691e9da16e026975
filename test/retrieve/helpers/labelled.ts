import { type Harness, uploadFile } from '../../ingest/helpers/harness.js';

/**
 * A small labelled set where the lexical side must change the order. The query asks for a rare
 * code word wrapped in stop words. `pump` is the relevant chunk (the only one with the code);
 * `decoy` is made of the query's stop words, which the hashed bag-of-words dense model counts
 * (so dense ranks it first) and BM25 drops (so it has no lexical match at all).
 */
export const CODE_QUERY = 'what is this ZQX4411 about';

export const LABELLED: Record<string, string> = {
  decoy: 'What is this about? This is what the handbook is about, and that is all there is to it.',
  pump: 'The pump halts with fault ZQX4411 when the inlet valve is closed; open the valve and restart.',
  bikes: 'Bicycle lanes in Copenhagen are wide. Cyclists ride on separate bicycle paths all year.',
  bread: 'Danish rye bread (rugbrød) is dark, dense and made with sourdough and whole grains.',
  tax: 'Income tax in Denmark is high. The municipal tax and the state tax are paid on income.',
};

/** Ingest settings that keep each labelled text in one chunk. */
export const ONE_CHUNK = { CHUNK_SPLIT_BY: 'word', CHUNK_SIZE: '200', CHUNK_OVERLAP: '0' };

/** Uploads one text file through the ingestion service, as the chat platform does. */
export async function ingestText(h: Harness, fileId: string, collection: string, text: string) {
  await uploadFile(
    h.app,
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: collection, user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
}

export async function ingestLabelled(h: Harness, collection: string) {
  for (const [id, text] of Object.entries(LABELLED)) await ingestText(h, id, collection, text);
}

export const fileIds = (metas: Record<string, unknown>[]) => metas.map((m) => m.file_id);

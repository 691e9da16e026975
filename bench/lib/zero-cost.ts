import type { DenseEmbedder } from '../../src/embed/dense.js';

/** Answers one fixed unit vector per text: the pipeline's cost without a model's. */
export function zeroCostEmbedder(dim: number): DenseEmbedder {
  const unit = [1, ...new Array<number>(dim - 1).fill(0)];
  return {
    provider: 'zero-cost',
    model: 'none',
    dim,
    embedDocuments: async (texts) => texts.map(() => unit),
    embedQuery: async () => [...unit],
  };
}

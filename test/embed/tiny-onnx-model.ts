import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOKENIZER } from '../fixtures/index.js';

/**
 * Writes a real, tiny transformers.js feature-extraction model directory: the all-MiniLM-L6-v2
 * WordPiece tokenizer from `test/fixtures/models`, a BERT `config.json`, and `onnx/model.onnx` whose graph is
 * a single `Gather` of a seeded embedding table by `input_ids` → `last_hidden_state`. ONNX Runtime
 * really runs it, so mean pooling over the attention mask and normalisation are transformers.js's own,
 * and the expected vector of any text is `mean(table[id] for id in tokens)`, normalised.
 */
export const TINY_DIM = 8;
export const TINY_VOCAB = 30522;
export const SHARED_TOKENIZER = TOKENIZER;

/** Row `id` of the embedding table: a fixed pseudo-random function of (id, d). */
export function tableRow(id: number): number[] {
  const row: number[] = [];
  for (let d = 0; d < TINY_DIM; d++) {
    const x = Math.sin(id * 12.9898 + d * 78.233) * 43758.5453;
    // float32, because that is what the model stores
    row.push(Math.fround(x - Math.floor(x) - 0.5));
  }
  return row;
}

export function writeTinyModel(dir: string, maxLength = 512): void {
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  copyFileSync(SHARED_TOKENIZER, join(dir, 'tokenizer.json'));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: maxLength,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
    }),
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: TINY_DIM,
      vocab_size: TINY_VOCAB,
      max_position_embeddings: maxLength,
    }),
  );
  writeFileSync(join(dir, 'onnx', 'model.onnx'), gatherModel());
}

// --- a minimal protobuf writer for onnx.proto (ModelProto and what it nests) ---

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, n: number) => [...key(field, 0), ...varint(n)];
function bytes(field: number, data: Uint8Array | number[]): number[] {
  return [...key(field, 2), ...varint(data.length), ...data];
}
const str = (field: number, s: string) => bytes(field, [...new TextEncoder().encode(s)]);

const INT64 = 7;
const FLOAT = 1;

function valueInfo(name: string, elemType: number, dims: Array<string | number>): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === 'number' ? int(1, d) : str(2, d)));
  const tensorType = [...int(1, elemType), ...bytes(2, shape)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

function gatherModel(): Uint8Array {
  const table = new Float32Array(TINY_VOCAB * TINY_DIM);
  for (let id = 0; id < TINY_VOCAB; id++) table.set(tableRow(id), id * TINY_DIM);
  const initializer = [
    ...int(1, TINY_VOCAB),
    ...int(1, TINY_DIM),
    ...int(2, FLOAT),
    ...str(8, 'embeddings'),
    ...bytes(9, new Uint8Array(table.buffer)),
  ];
  const node = [
    ...str(1, 'embeddings'),
    ...str(1, 'input_ids'),
    ...str(2, 'last_hidden_state'),
    ...str(3, 'lookup'),
    ...str(4, 'Gather'),
  ];
  const graph = [
    ...bytes(1, node),
    ...str(2, 'tiny-gather'),
    ...bytes(5, initializer),
    ...bytes(11, valueInfo('input_ids', INT64, ['batch', 'sequence'])),
    ...bytes(11, valueInfo('attention_mask', INT64, ['batch', 'sequence'])),
    ...bytes(11, valueInfo('token_type_ids', INT64, ['batch', 'sequence'])),
    ...bytes(12, valueInfo('last_hidden_state', FLOAT, ['batch', 'sequence', TINY_DIM])),
  ];
  const model = [
    ...int(1, 8), // ir_version
    ...str(2, 'kilde-test'),
    ...bytes(7, graph),
    ...bytes(8, [...str(1, ''), ...int(2, 17)]), // opset_import: default domain, opset 17
  ];
  return Uint8Array.from(model);
}

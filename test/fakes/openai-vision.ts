import { z } from 'zod';
import type { RecordedRequest } from './recording-server.js';

/**
 * Reads a vision chat-completions request as the fake received it (OpenAI's wire shape: one user
 * message whose content is a text part and `image_url` parts with data URLs), decoding each page
 * image's PNG header so tests can check what was rendered.
 */
const partSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) }),
]);
const requestSchema = z.object({
  model: z.string(),
  max_tokens: z.number().int(),
  temperature: z.number().optional(),
  messages: z.array(z.object({ role: z.literal('user'), content: z.array(partSchema) })).length(1),
});

export interface VisionImage {
  mime: string;
  width: number;
  height: number;
  bytes: Buffer;
}

export interface VisionRequest {
  model: string;
  maxTokens: number;
  temperature: number | undefined;
  /** The text parts, joined. */
  prompt: string;
  images: VisionImage[];
  authorization: string | undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Parses a recorded request; throws (failing the test) when it is not the wire shape. */
export function visionRequestOf(req: RecordedRequest): VisionRequest {
  const body = requestSchema.parse(req.json);
  const parts = body.messages[0]!.content;
  const images = parts.flatMap((p) => (p.type === 'image_url' ? [decodeImage(p.image_url.url)] : []));
  return {
    model: body.model,
    maxTokens: body.max_tokens,
    temperature: body.temperature,
    prompt: parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'),
    images,
    authorization: req.headers.authorization,
  };
}

function decodeImage(url: string): VisionImage {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!m) throw new Error(`image_url is not a base64 data URL: ${url.slice(0, 40)}`);
  const bytes = Buffer.from(m[2]!, 'base64');
  if (!bytes.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error('image is not a PNG');
  // IHDR is the first chunk: width and height, big-endian, at bytes 16 and 20.
  return { mime: m[1]!, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20), bytes };
}

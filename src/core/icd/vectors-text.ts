import { decodeUtf8Text, parseJsonlLines, parseJsonText } from '../text-data';

/**
 * Embedding vectors as found in files, not yet checked (createEmbeddingTable checks them): JSON (an
 * array of vectors, or an object keyed by query id) or JSONL (one vector a line), from the file's
 * bytes (UTF-8, or a DatasetValidationError naming `source` and the line) or its text.
 */
export function parseIcdVectorsText(
  input: string | Uint8Array,
  format: 'json' | 'jsonl',
  source?: string,
): unknown {
  const text = typeof input === 'string' ? input : decodeUtf8Text(input, source);
  if (format === 'jsonl') return parseJsonlLines(text, source).map((line) => line.value);
  return parseJsonText(text, source);
}

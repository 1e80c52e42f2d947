// Checks for numbers loaded from files (checkpoint blobs, model weights): a NaN or an infinity
// there is a damaged or tampered file, never a value to train or decode from.

/** The first element that is NaN or ±Infinity, with its value, or null. */
export function firstNonFinite(values: ArrayLike<number>): { index: number; value: number } | null {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!Number.isFinite(value)) return { index: i, value };
  }
  return null;
}

/** Little-endian float32 bytes as values (copied: the bytes may sit unaligned in a larger buffer). */
export function float32Values(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.byteLength & ~3)));
}

/**
 * Which of consecutive parameters (laid out end to end, in order) holds flat element `index`, and
 * the element within it; null past the end.
 */
export function parameterAt(
  parameters: ReadonlyArray<{ name: string; size: number }>,
  index: number,
): { name: string; element: number } | null {
  let start = 0;
  for (const p of parameters) {
    if (index < start + p.size) return { name: p.name, element: index - start };
    start += p.size;
  }
  return null;
}

/** Images cost tokens too: a flat estimate per image (a high-detail page is several hundred). */
const TOKENS_PER_IMAGE = 800;

/** Request fields that ask for an output budget; providers count output toward TPM. */
const OUTPUT_BUDGET_KEYS = new Set(['max_tokens', 'max_output_tokens', 'maxOutputTokens']);

/**
 * Tokens a call will count against a tokens-per-minute limit, from its arguments: characters of
 * strings / 4, token-id arrays as they are, a flat amount per image, plus any output budget the
 * request asks for.
 */
export function estimateTokens(args: readonly unknown[]): number {
  let tokens = 0;
  let chars = 0;
  const visit = (value: unknown, key: string, depth: number) => {
    if (typeof value === 'string') chars += value.length;
    else if (typeof value === 'number') {
      if (OUTPUT_BUDGET_KEYS.has(key)) tokens += value;
    } else if (value instanceof Uint8Array) tokens += TOKENS_PER_IMAGE;
    else if (Array.isArray(value)) {
      if (value.length > 0 && value.every((v) => typeof v === 'number')) tokens += value.length;
      else if (depth < 4) value.forEach((v) => visit(v, '', depth + 1));
    } else if (value && typeof value === 'object' && depth < 4 && !(value instanceof AbortSignal)) {
      for (const [k, v] of Object.entries(value)) visit(v, k, depth + 1);
    }
  };
  args.forEach((a) => visit(a, '', 0));
  return tokens + Math.ceil(chars / 4);
}

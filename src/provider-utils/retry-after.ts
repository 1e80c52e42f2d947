/** Response headers as the SDKs give them: a WHATWG `Headers`, or a plain record (undici, node:http). */
export type HeadersLike =
  | {
      /** The header's value, `null` when it is absent. */
      get(name: string): string | null;
    }
  | Record<string, string | string[] | undefined>;

/**
 * When the server asks to come back (Retry-After in seconds or as an HTTP date, or
 * retry-after-ms), in milliseconds, as openai-node reads it. `now` is for HTTP dates.
 */
export function parseRetryAfter(headers: HeadersLike | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const get = (name: string): string | undefined => {
    if (typeof (headers as { get?: unknown }).get === 'function')
      return (headers as { get(n: string): string | null }).get(name) ?? undefined;
    const record = headers as Record<string, string | string[] | undefined>;
    const value = record[name] ?? record[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number.parseFloat(ms))) return Number.parseFloat(ms);
  const after = get('retry-after');
  if (after === undefined) return undefined;
  const seconds = Number.parseFloat(after);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** Google's quota errors say when to come back in the body: `RetryInfo.retryDelay` ("37s"). */
export function retryDelayFromBody(message: string): number | undefined {
  const match = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(message);
  return match ? Number(match[1]) * 1000 : undefined;
}

import { ProviderCallError, type PortName } from '../core/errors';

/** Redirects followed within the configured origin before a call gives up (fetch's own limit is 20). */
export const MAX_SAME_ORIGIN_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Who is calling, for the errors: the port and the adapter's provider name. */
export interface HttpCaller {
  port: PortName;
  provider: string;
}

/**
 * Where a response sends the request next: `null` when it is not a redirect (no Location, or
 * not 301/302/303/307/308). A redirect to another origin is refused before anything is sent
 * there (a credential is for the origin it was configured for, and so is the request's data),
 * and so is a chain of more than MAX_SAME_ORIGIN_REDIRECTS: both typed, never retried.
 */
export function redirectTarget(
  caller: HttpCaller,
  args: { from: URL; origin: string; status: number; location: string | null; hops: number },
): URL | null {
  if (!REDIRECT_STATUSES.has(args.status) || args.location === null) return null;
  let next: URL;
  try {
    next = new URL(args.location, args.from);
  } catch {
    throw new ProviderCallError({
      ...caller,
      status: args.status,
      isRetryable: false,
      message: 'redirected to an address that is not a URL',
    });
  }
  if (next.origin !== args.origin)
    throw new ProviderCallError({
      ...caller,
      status: args.status,
      isRetryable: false,
      message: `redirected to another origin, ${next.origin} (from ${args.origin}); the request and its credential are not sent there: configure the address the server redirects to, if you trust it`,
    });
  if (args.hops >= MAX_SAME_ORIGIN_REDIRECTS)
    throw new ProviderCallError({
      ...caller,
      status: args.status,
      isRetryable: false,
      message: `more than ${MAX_SAME_ORIGIN_REDIRECTS} redirects within ${args.origin}; configure the final address`,
    });
  return next;
}

/** A response body over the adapter's `maxResponseBytes`: typed, not retried (the same request would get the same body). */
export function responseTooLarge(
  caller: HttpCaller,
  maxResponseBytes: number,
  declaredBytes?: number,
  setting = 'maxResponseBytes',
): ProviderCallError {
  const size = declaredBytes === undefined ? 'more than that' : `${declaredBytes} bytes`;
  return new ProviderCallError({
    ...caller,
    isRetryable: false,
    message: `the response is larger than ${setting} (${maxResponseBytes} bytes; ${size}); it was not read further. Raise ${setting} in the adapter's settings if the server's answers are that large`,
  });
}

/** The Content-Length a response declares, when it is a number. */
function declaredLength(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value);
}

/** An error status's body is read up to this many bytes, the rest dropped: a message needs no more. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Reads a body (any async iterable of byte chunks: undici's, a WHATWG stream) up to
 * `maxResponseBytes`: past it, reading stops, the body is destroyed and a typed error thrown;
 * the rest is never buffered. With `truncate` (an error status's body, read for its message),
 * the first `maxResponseBytes` are returned instead of an error.
 */
export async function readCapped(
  caller: HttpCaller,
  body: AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => unknown },
  options: {
    maxBytes: number;
    /** The response's Content-Length: a declared size over the cap is refused before reading. */
    contentLength?: string | null | undefined;
    truncate?: boolean;
    /** The setting the error names (`maxResponseBytes`, `maxImageBytes`). */
    setting?: string;
  },
): Promise<Uint8Array> {
  const { maxBytes: maxResponseBytes, truncate = false, setting } = options;
  const declared = declaredLength(options.contentLength);
  if (!truncate && declared !== undefined && declared > maxResponseBytes) {
    const error = responseTooLarge(caller, maxResponseBytes, declared, setting);
    body.destroy?.(error);
    throw error;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.byteLength > maxResponseBytes) {
      const error = responseTooLarge(caller, maxResponseBytes, undefined, setting);
      body.destroy?.(error);
      if (!truncate) throw error;
      chunks.push(chunk.subarray(0, maxResponseBytes - size));
      size = maxResponseBytes;
      break;
    }
    size += chunk.byteLength;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The response with a body that errors (typed) past `maxResponseBytes` and stops reading there.
 * An error status's body ends (without an error) at MAX_ERROR_BODY_BYTES instead, so that the
 * SDK still reports the status, with what it read as the message.
 */
function cappedResponse(caller: HttpCaller, response: Response, maxBytes: number): Response {
  const truncate = response.status >= 400;
  const maxResponseBytes = truncate ? Math.min(maxBytes, MAX_ERROR_BODY_BYTES) : maxBytes;
  const declared = declaredLength(response.headers.get('content-length'));
  if (!truncate && declared !== undefined && declared > maxResponseBytes) {
    const error = responseTooLarge(caller, maxResponseBytes, declared);
    void response.body?.cancel(error).catch(() => undefined);
    throw error;
  }
  if (!response.body || NULL_BODY.has(response.status)) return response;
  const reader = response.body.getReader();
  let size = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      if (size + value.byteLength > maxResponseBytes) {
        const error = responseTooLarge(caller, maxResponseBytes);
        await reader.cancel(error).catch(() => undefined);
        if (!truncate) {
          controller.error(error);
          return;
        }
        controller.enqueue(value.subarray(0, maxResponseBytes - size));
        size = maxResponseBytes;
        controller.close();
        return;
      }
      size += value.byteLength;
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * A fetch for vendor SDKs (openai, @google/genai) that keeps a call within its configured origin
 * and its answer within `maxResponseBytes`. Redirects are not followed by fetch
 * (`redirect: 'manual'`: fetch would send the body, and every header it does not know to be a
 * credential, such as `x-goog-api-key`, to wherever the server points); this follows those within
 * the request's origin itself and refuses the others (redirectTarget). The errors it throws are
 * SearcherErrors, which toProviderError passes through as they are.
 */
export function guardedFetch(
  caller: HttpCaller,
  options: { maxResponseBytes: number; fetch?: typeof fetch },
): typeof fetch {
  const base = options.fetch ?? fetch;
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    const origin = url.origin;
    let request: RequestInit = { ...init, redirect: 'manual' };
    for (let hops = 0; ; hops++) {
      const response = await base(hops === 0 && input instanceof Request ? input : url, request);
      const next = redirectTarget(caller, {
        from: url,
        origin,
        status: response.status,
        location: response.headers.get('location'),
        hops,
      });
      if (next === null) return cappedResponse(caller, response, options.maxResponseBytes);
      await response.body?.cancel().catch(() => undefined);
      const method = (request.method ?? 'GET').toUpperCase();
      // As fetch does: 303 turns any method but HEAD into a GET, 301/302 turn a POST into one.
      if (
        (response.status === 303 && method !== 'GET' && method !== 'HEAD') ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        const headers = new Headers(request.headers);
        for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language'])
          headers.delete(name);
        request = { ...request, method: 'GET', body: null, headers };
      } else if (request.body instanceof ReadableStream) {
        throw new ProviderCallError({
          ...caller,
          status: response.status,
          isRetryable: false,
          message: `redirected within ${origin}, but a streamed request body cannot be sent again; configure the final address`,
        });
      }
      url = next;
    }
  };
}

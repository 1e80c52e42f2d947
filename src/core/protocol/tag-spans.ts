/**
 * The bodies of `open … close` spans, left to right, each ending at the first `close` after its
 * `open`: what `/<t>([\s\S]*?)<\/t>/g` matches, found with indexOf in linear time. The regex is
 * quadratic on a body of many opens and no close (each open rescans to the end); this is not
 * (docs/architecture.md#regular-expressions).
 */
export function tagSpans(
  text: string,
  open: string,
  close: string,
): Array<{ start: number; end: number; body: string }> {
  const spans: Array<{ start: number; end: number; body: string }> = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf(open, from);
    if (start < 0) return spans;
    const bodyStart = start + open.length;
    const closeAt = text.indexOf(close, bodyStart);
    // No close after this open means none after any later open either.
    if (closeAt < 0) return spans;
    const end = closeAt + close.length;
    spans.push({ start, end, body: text.slice(bodyStart, closeAt) });
    from = end;
  }
}

/** `text` with every `open … close` span (as `tagSpans` finds them) replaced by `replace(body)`. */
export function replaceTagSpans(
  text: string,
  open: string,
  close: string,
  replace: (body: string) => string,
): string {
  let out = '';
  let at = 0;
  for (const span of tagSpans(text, open, close)) {
    out += text.slice(at, span.start) + replace(span.body);
    at = span.end;
  }
  return out + text.slice(at);
}

/** The first line after `prefix` (up to the next newline, which must exist), as `/prefix(.*)\n/` gives it. */
export function lineAfter(text: string, prefix: string): string | undefined {
  let from = 0;
  for (;;) {
    const at = text.indexOf(prefix, from);
    if (at < 0) return undefined;
    const start = at + prefix.length;
    const newline = text.indexOf('\n', start);
    if (newline < 0) return undefined;
    // `.` does not match \r, \u2028 or \u2029: a line holding one is no match for the regex; look further on.
    const line = text.slice(start, newline);
    if (!/[\r\u2028\u2029]/.test(line)) return line;
    from = at + 1;
  }
}

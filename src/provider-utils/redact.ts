/** Replaces every occurrence of each secret (API keys, auth header values) in a text. */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  // Longest first: a shorter secret inside a longer one ("Bearer k" and "k") must not split it.
  const ordered = secrets
    .filter((s): s is string => typeof s === 'string' && s.length >= 4)
    .sort((a, b) => b.length - a.length);
  for (const secret of ordered) out = out.split(secret).join('[redacted]');
  return out;
}

/**
 * A text for a message, at most about `maxChars` long, with no secret in it: redacted first, then
 * cut (a cut first could split a key and leave its head unredacted), and a tail that is the
 * start (4 characters or more) of a secret is redacted too.
 */
export function redactAndCut(
  text: string,
  secrets: ReadonlyArray<string | undefined>,
  maxChars: number,
): string {
  const cut = redactSecrets(text, secrets).slice(0, maxChars);
  let tail = 0;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    for (let k = Math.min(secret.length - 1, cut.length); k >= 4 && k > tail; k--) {
      if (cut.endsWith(secret.slice(0, k))) {
        tail = k;
        break;
      }
    }
  }
  return tail > 0 ? `${cut.slice(0, cut.length - tail)}[redacted]` : cut;
}

/** Header values that authenticate (and the token after "Bearer "), to redact from messages. */
export function headerSecrets(headers: Record<string, string> | undefined): string[] {
  return Object.values(headers ?? {}).flatMap((value) => [
    value,
    value.replace(/^(Bearer|Basic|Token)\s+/i, ''),
  ]);
}

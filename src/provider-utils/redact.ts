/** Replaces every occurrence of each secret (API keys, auth header values) in a text. */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}

/** Header values that authenticate (and the token after "Bearer "), to redact from messages. */
export function headerSecrets(headers: Record<string, string> | undefined): string[] {
  return Object.values(headers ?? {}).flatMap((value) => [value, value.replace(/^(Bearer|Basic|Token)\s+/i, '')]);
}

import {
  credentialValues,
  isCredentialHeader,
  redactAndCut as redactAndCutInCore,
  redactSecretsIn,
} from '../core/secrets';

/**
 * Replaces every occurrence of each secret (API keys, auth header values) in a text, and every
 * secret registered in the process (src/core/secrets.ts: whole, encoded, or its head or tail).
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  return redactSecretsIn(text, secrets);
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
  return redactAndCutInCore(text, secrets, maxChars);
}

/**
 * The values of the headers that authenticate (every header but the plain ones: content-type,
 * accept, user-agent...) and the token after "Bearer ", to redact from messages.
 */
export function headerSecrets(headers: Record<string, string> | undefined): string[] {
  return Object.entries(headers ?? {})
    .filter(([name]) => isCredentialHeader(name))
    .flatMap(([, value]) => credentialValues(value));
}

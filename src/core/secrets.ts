/**
 * The secrets this process has been configured with (API keys, credential header values), and
 * the one redaction every error message, log line and stored record goes through. Adapters
 * register a key when they read it (`loadApiKey`, `parseSettings`); SearcherError redacts its
 * message and its causes' messages; the stores redact each record, the run folder its JSON
 * files. A key is redacted wherever it appears: in a provider's error body, and equally inside
 * content (a judge's reply quoting it, a generator's answer, a retrieved page).
 *
 * One registry per process, kept on `globalThis` under a `Symbol.for` key so that every copy of
 * the package (bundled subpaths, duplicated installs) shares it, as the error brand does.
 */

import type { StoreRecord } from '../ports/store';

const REGISTRY = Symbol.for('searcher-rl.secrets');
const MARK = '[redacted]';

/**
 * Shorter values are not registered: redacting them from every stored record would hit ordinary
 * text. (A key given for one call, as `extra`, is still redacted there from 4 characters.)
 */
export const MIN_REGISTERED_SECRET_LENGTH = 8;
/** The head or tail of a key cut this long or longer is redacted wherever it appears. */
const FRAGMENT_LENGTH = 8;
const MIN_EXTRA_LENGTH = 4;

interface Registry {
  secrets: Set<string>;
  /** Each secret and its encodings (JSON-escaped, URL-encoded), longest first; rebuilt on registration. */
  forms: string[];
}

function registry(): Registry {
  const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
  let found = holder[REGISTRY];
  if (!found) {
    found = { secrets: new Set(), forms: [] };
    holder[REGISTRY] = found;
  }
  return found;
}

/** A secret as it may appear in text: itself, inside a JSON string, in a URL. */
function formsOf(secret: string): string[] {
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1)]);
  try {
    forms.add(encodeURIComponent(secret));
  } catch {
    // A lone surrogate has no URL form.
  }
  return [...forms];
}

/** Registers a configured secret (an API key, a credential header's value): from now on it is redacted everywhere. */
export function registerSecret(value: unknown): void {
  if (typeof value !== 'string' || value.length < MIN_REGISTERED_SECRET_LENGTH) return;
  const found = registry();
  if (found.secrets.has(value)) return;
  found.secrets.add(value);
  found.forms = [...new Set([...found.secrets].flatMap(formsOf))].sort((a, b) => b.length - a.length);
}

/** Whether any secret is registered (stores skip the copy when none is). */
export function hasRegisteredSecrets(): boolean {
  return registry().secrets.size > 0;
}

/** Spans [start, end) of `text` that are a secret, or its head or tail (FRAGMENT_LENGTH or more), or an extra secret whole. */
function secretSpans(
  text: string,
  forms: readonly string[],
  extra: readonly string[],
): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  for (const secret of forms) {
    const fragment = Math.min(FRAGMENT_LENGTH, secret.length);
    const head = secret.slice(0, fragment);
    for (let i = text.indexOf(head); i >= 0; i = text.indexOf(head, i + 1)) {
      let end = i + fragment;
      while (end - i < secret.length && text[end] === secret[end - i]) end++;
      spans.push([i, end]);
    }
    if (fragment === secret.length) continue;
    const tail = secret.slice(-fragment);
    for (let i = text.indexOf(tail); i >= 0; i = text.indexOf(tail, i + 1)) {
      let start = i;
      const offset = secret.length - fragment;
      while (i - start < offset && text[start - 1] === secret[offset - (i - start) - 1]) start--;
      spans.push([start, i + fragment]);
    }
  }
  for (const secret of extra)
    for (let i = text.indexOf(secret); i >= 0; i = text.indexOf(secret, i + 1))
      spans.push([i, i + secret.length]);
  return spans;
}

/**
 * `text` with every registered secret (whole, JSON-escaped, URL-encoded, or its head or tail cut
 * off at 8 characters or more) and every `extra` secret (whole) replaced by `[redacted]`.
 */
export function redactSecretsIn(text: string, extra: ReadonlyArray<string | undefined> = []): string {
  const forms = registry().forms;
  const given = extra
    .filter((s): s is string => typeof s === 'string' && s.length >= MIN_EXTRA_LENGTH)
    .flatMap(formsOf);
  if (forms.length === 0 && given.length === 0) return text;
  const spans = secretSpans(text, forms, given).sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    if (end <= at) continue;
    out += start >= at ? `${text.slice(at, start)}${MARK}` : '';
    at = end;
  }
  return out + text.slice(at);
}

/**
 * A text for a message, at most about `maxChars` long, with no secret in it: redacted first, then
 * cut (a cut first could split a key and leave its head), and a tail that is the start (4
 * characters or more) of a secret is redacted too.
 */
export function redactAndCut(
  text: string,
  extra: ReadonlyArray<string | undefined>,
  maxChars: number,
): string {
  const cut = redactSecretsIn(text, extra).slice(0, maxChars);
  let tail = 0;
  for (const secret of [...registry().secrets, ...extra]) {
    if (!secret || secret.length < MIN_EXTRA_LENGTH) continue;
    for (let k = Math.min(secret.length - 1, cut.length); k >= MIN_EXTRA_LENGTH && k > tail; k--) {
      if (cut.endsWith(secret.slice(0, k))) {
        tail = k;
        break;
      }
    }
  }
  return tail > 0 ? `${cut.slice(0, cut.length - tail)}${MARK}` : cut;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A copy of `value` with every string in it (values and keys of plain objects and arrays)
 * redacted; parts with nothing to redact are returned as they were (same object), and so is
 * anything that is not a plain object, an array or a string (numbers, bytes, dates).
 */
export function redactDeep<T>(value: T): T {
  if (!hasRegisteredSecrets()) return value;
  return redactValue(value) as T;
}

function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactSecretsIn(value);
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const redacted = redactValue(item);
      if (redacted !== item) changed = true;
      return redacted;
    });
    return changed ? out : value;
  }
  if (!isPlainObject(value)) return value;
  let changed = false;
  const entries = Object.entries(value).map(([k, v]) => {
    const key = redactSecretsIn(k);
    const redacted = redactValue(v);
    if (key !== k || redacted !== v) changed = true;
    return [key, redacted] as const;
  });
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * A store record as it may be written: every string redacted but its run id and kind (checked
 * identifiers that name where it goes). Every store adapter writes records through this.
 */
export function redactStoreRecord(record: StoreRecord): StoreRecord {
  if (!hasRegisteredSecrets()) return record;
  const { runId, kind, ...rest } = record;
  const redacted = redactValue(rest);
  return redacted === rest ? record : ({ ...(redacted as object), runId, kind } as StoreRecord);
}

/**
 * Redacts the messages (and stacks) of an error's cause chain in place: a vendor SDK's error
 * kept as `cause` may quote a key in its own message, and causes are printed (`util.inspect`,
 * the CLI's "caused by"). A string cause comes back redacted; other values are left as they are.
 */
export function redactCause(cause: unknown): unknown {
  if (typeof cause === 'string') return redactSecretsIn(cause);
  if (!hasRegisteredSecrets()) return cause;
  const seen = new Set<unknown>();
  const visit = (error: unknown, depth: number) => {
    if (!(error instanceof Error) || seen.has(error) || depth > 8) return;
    seen.add(error);
    try {
      const message = redactSecretsIn(error.message);
      if (message !== error.message) error.message = message;
      const stack = typeof error.stack === 'string' ? redactSecretsIn(error.stack) : error.stack;
      if (stack !== error.stack) error.stack = stack;
    } catch {
      // A frozen error cannot be changed; it was not ours to begin with.
    }
    visit((error as { cause?: unknown }).cause, depth + 1);
    const errors = (error as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
  };
  visit(cause, 0);
  return cause;
}

/** Field names whose value is a credential, in any configuration or settings object. */
const SECRET_FIELD = /^(api[-_]?key|apiKey|token|secret|password|client[-_]?secret)$/i;
/** Headers that carry no credential; every other header's value is treated as one. */
const PLAIN_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'cache-control',
  'connection',
  'content-encoding',
  'content-language',
  'content-length',
  'content-type',
  'host',
  'origin',
  'pragma',
  'referer',
  'user-agent',
]);

/** Whether a header's value is to be treated as a credential (anything but the plain headers). */
export function isCredentialHeader(name: string): boolean {
  return !PLAIN_HEADERS.has(name.toLowerCase());
}

/**
 * A copy of a configuration (or settings) object without its credentials, for writing down (a
 * run folder's `config.json`): an `apiKey`-like field is left out (a run continued from the
 * folder reads the key from the environment), a credential header's value is `[redacted]`.
 * Each of them is registered, so that it is redacted wherever else it turns up.
 */
export function withoutSecretFields<T>(value: T): T {
  return strip(value) as T;
}

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (SECRET_FIELD.test(key) && typeof item === 'string') {
      registerSecret(item);
      continue;
    }
    if (key === 'headers' && isPlainObject(item)) {
      out[key] = Object.fromEntries(
        Object.entries(item).map(([name, header]) => {
          if (typeof header !== 'string' || !isCredentialHeader(name)) return [name, header];
          for (const secret of credentialValues(header)) registerSecret(secret);
          return [name, MARK];
        }),
      );
      continue;
    }
    out[key] = strip(item);
  }
  return redactValue(out);
}

/** Registers the credentials of a configuration or settings object (its `apiKey`-like fields, its credential headers). */
export function registerSecretFields(value: unknown): void {
  strip(value);
}

/** A credential header's value and, for `Bearer x` / `Basic x` / `Token x`, the token alone. */
export function credentialValues(header: string): string[] {
  const token = header.replace(/^(Bearer|Basic|Token)\s+/i, '');
  return token === header ? [header] : [header, token];
}

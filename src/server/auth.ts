import { createHash, timingSafeEqual } from 'node:crypto';

/** Equal strings in a time that depends on neither (hashed first, so not on their lengths). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The password of `Basic base64(user:password)`, as given and percent-decoded (Node's URL keeps it encoded). */
function basicPasswords(credentials: string): string[] {
  const decoded = Buffer.from(credentials, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return [];
  const password = decoded.slice(colon + 1);
  try {
    const unescaped = decodeURIComponent(password);
    return unescaped === password ? [password] : [password, unescaped];
  } catch {
    return [password];
  }
}

/** The user name of `Authorization: Basic base64(user:password)`, when there is a non-empty one. */
export function basicUserName(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const space = authorization.indexOf(' ');
  if (space < 0 || authorization.slice(0, space).toLowerCase() !== 'basic') return undefined;
  const decoded = Buffer.from(authorization.slice(space + 1).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon < 0 ? '' : decoded.slice(0, colon);
  return user.length > 0 && user.length <= 200 ? user : undefined;
}

/**
 * The token check of `--token`: `Authorization: Bearer T`, or HTTP Basic credentials whose password
 * is T (any user name). The second is what the clients users have send without a header option:
 * OpenEnv's `EnvClient`/`GenericEnvClient` (and so TRL's `environment_factory`) connect with the
 * `websockets` package, which turns `ws://user:T@host:port` into `Authorization: Basic`, as do
 * `requests`, curl and browsers.
 */
export function createTokenCheck(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null) return () => true;
  return (authorization) => {
    if (!authorization) return false;
    const space = authorization.indexOf(' ');
    const scheme = authorization.slice(0, space).toLowerCase();
    const credentials = authorization.slice(space + 1).trim();
    if (space < 0) return false;
    if (scheme === 'bearer') return sameSecret(credentials, token);
    if (scheme === 'basic')
      return basicPasswords(credentials).some((password) => sameSecret(password, token));
    return false;
  };
}

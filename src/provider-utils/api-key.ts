import { InvalidArgumentError } from '../core/errors';
import { registerSecret } from '../core/secrets';

/**
 * An API key from the settings, else from the first set environment variable of `names`, read
 * when the adapter first needs it. A missing key says both ways to provide it. The key is
 * registered (src/core/secrets.ts): from then on it is redacted from every error, log and record.
 */
export function loadApiKey(options: {
  apiKey: string | undefined;
  environmentVariableNames: readonly string[];
  vendor: string;
  /** The factory the user called, named in the error (`createOpenAIJudge`). */
  factory: string;
  env?: Readonly<Record<string, string | undefined>>;
}): string {
  const env = options.env ?? process.env;
  const names = options.environmentVariableNames;
  const key =
    options.apiKey ?? names.map((name) => env[name] || undefined).find((value) => value !== undefined);
  if (key) {
    registerSecret(key);
    return key;
  }
  const variables = names.length > 1 ? `${names[0]} (or ${names.slice(1).join(' or ')})` : names[0];
  throw new InvalidArgumentError({
    argument: 'apiKey',
    message: `no ${options.vendor} API key: pass { apiKey } to ${options.factory}(...) or set the ${variables} environment variable`,
  });
}

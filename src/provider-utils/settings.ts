import { z } from 'zod';
import { ConfigValidationError } from '../core/errors';
import { registerSecretFields } from '../core/secrets';

/**
 * One validator issue as zod reports it: the path, the message, and the unknown keys of an
 * `unrecognized_keys` issue.
 */
type Issue = { path: ReadonlyArray<PropertyKey>; message: string; code?: string; keys?: readonly string[] };

/**
 * Validator issues as `{field, message}` with dotted fields under `prefix`. An unknown key is
 * reported at the key itself (`judge.maxRetry`), not at its parent object.
 */
export function issueFields(
  issues: readonly Issue[],
  prefix = '',
): Array<{ field: string; message: string }> {
  const join = (path: readonly string[]) => [prefix, ...path].filter((p) => p !== '').join('.') || '(root)';
  return issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys' && issue.keys)
      return issue.keys.map((key) => ({
        field: join([...path, key]),
        message: 'unknown field (misspelt, or not supported here)',
      }));
    return [{ field: join(path), message: issue.message }];
  });
}

/**
 * Settings checked at the factory: a wrong field throws ConfigValidationError naming
 * `factory.field`. Credentials among them (`apiKey`, credential headers) are registered, so
 * that they are redacted from every error, log and record from the start.
 */
export function parseSettings<S extends z.ZodType>(
  factory: string,
  schema: S,
  settings: unknown,
): z.output<S> {
  const result = schema.safeParse(settings);
  if (result.success) {
    registerSecretFields(result.data);
    return result.data;
  }
  throw new ConfigValidationError({
    issues: issueFields(result.error.issues as Issue[], factory).map((f) =>
      f.field === factory ? { ...f, field: `${factory}.(settings)` } : f,
    ),
  });
}

/** A positive integer setting: the one definition every settings schema uses. */
export const positiveInt = () => z.number().int().positive();

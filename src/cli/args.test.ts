import { describe, expect, it } from 'vitest';
import { registerSecret } from '../provider-utils/index';
import { describeFailure } from './args';

describe('describeFailure', () => {
  it('prints no registered secret, from a raw error or any of its causes', () => {
    const key = 'sk-cli-canary-0f9e8d7c6b5a';
    registerSecret(key);
    const inner = new Error(`401 from upstream: Authorization: Bearer ${key}`);
    const error = new Error(`request failed (${key.slice(0, 12)}...)`, { cause: inner });
    const lines = describeFailure(error).join('\n');
    expect(lines).toContain('caused by: 401 from upstream');
    expect(lines).not.toContain(key);
    expect(lines).not.toContain(key.slice(0, 12));
  });
});

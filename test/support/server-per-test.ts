import { afterEach, beforeEach } from 'vitest';

/**
 * A local server started before each test of the calling file (or `describe`) and closed after it,
 * so that no test sees another's requests. Returns a getter for the current test's server (the
 * form `faultSuite` takes).
 */
export function serverPerTest<Server extends { close(): Promise<void> }>(
  start: () => Promise<Server>,
): () => Server {
  let current: Server | undefined;
  beforeEach(async () => {
    current = await start();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return () => {
    if (current === undefined) throw new Error('serverPerTest: the server exists only while a test runs');
    return current;
  };
}

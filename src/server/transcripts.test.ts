import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from './env-server';
import { mockServedEnvironment } from '../../test/support/fixture-environment';
import { clientMessageSchema, serverMessageSchema } from './protocol';
import { openSession } from '../../test/support/ws-test-client';

type Transcript = Array<{ from: 'client' | 'server'; frame: unknown }>;
const load = (name: string): Transcript =>
  JSON.parse(readFileSync(new URL(`./__fixtures__/${name}.transcript.json`, import.meta.url), 'utf8'));

let server: EnvServer;
let url = '';
beforeAll(async () => {
  server = createEnvServer(mockServedEnvironment());
  url = `ws://127.0.0.1:${await server.listen(0)}/ws`;
});
afterAll(() => server.close());

// Recorded frame transcripts (both directions), replayed: every frame must fit the protocol's
// schema, and the server must answer exactly as recorded.
describe.each(['episode', 'errors'])('the %s transcript', (name) => {
  const transcript = load(name);
  it('validates in both directions', () => {
    for (const { from, frame } of transcript)
      (from === 'client' ? clientMessageSchema : serverMessageSchema).parse(frame);
  });
  it('replays frame for frame', async () => {
    const session = await openSession(url);
    for (let i = 0; i < transcript.length; i += 2) {
      expect(transcript[i]!.from).toBe('client');
      expect(await session.request(transcript[i]!.frame)).toEqual(transcript[i + 1]!.frame);
    }
    session.close();
  });
});

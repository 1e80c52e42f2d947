import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../ports/embedder';
import type { Generator } from '../../ports/generator';
import type { IcdScorer } from '../../ports/icd-scorer';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge } from '../../ports/judge';
import type { PolicyBackend } from '../../ports/policy-backend';
import type { SearchEngine } from '../../ports/search-engine';
import type { Store } from '../../ports/store';
import { UnsupportedPortVersionError, type PortName } from '../errors';
import { createIcdScoreCall } from '../icd/scoring';
import { createPortGateway } from './gateway';
import { checkPortVersion, SUPPORTED_PORT_VERSIONS } from './port-version';
import { withReliability } from './with-reliability';

const fail = async () => {
  throw new Error('not called');
};
/** A port of each kind, with every method its interface has. */
const PORTS = {
  searchEngine: { provider: 'se', doSearch: fail } as unknown as SearchEngine,
  generator: { provider: 'gen', doAnswer: fail } as unknown as Generator,
  judge: { provider: 'judge', doScore: fail } as unknown as Judge,
  imageOps: { provider: 'img', doCrop: fail } as unknown as ImageOps,
  embedder: { provider: 'emb', dimensions: 4, doEmbed: fail } as unknown as Embedder,
  store: {
    provider: 'st',
    doAppend: fail,
    doQuery: fail,
    doPutBlob: fail,
    doGetBlob: fail,
  } as unknown as Store,
  policy: {
    provider: 'pol',
    begin: fail,
    logProbs: fail,
    update: fail,
    save: fail,
    load: fail,
  } as unknown as PolicyBackend,
  icdScorer: { provider: 'icd', doScore: fail } as unknown as IcdScorer,
  tracker: { provider: 'trk', doStart: fail, doLogParams: fail, doLogScalars: fail, doFinish: fail },
} satisfies Record<PortName, unknown>;

/** Every way the core takes a port of `name`. */
function give(name: PortName, port: unknown): void {
  // A run checks each tracker it makes (src/run/trackers.ts) with this function.
  if (name === 'tracker') checkPortVersion('tracker', port);
  else if (name === 'icdScorer') createIcdScoreCall(port as IcdScorer);
  else createPortGateway({ [name]: port });
  if (name !== 'policy' && name !== 'icdScorer' && name !== 'tracker')
    (withReliability as (p: unknown, n: PortName) => unknown)(port, name);
}

describe('port specification versions', () => {
  for (const [name, base] of Object.entries(PORTS) as Array<[PortName, object]>) {
    it(`${name}: refuses a version the core does not support, naming the port, the version and the supported ones`, () => {
      for (const version of ['v2', 'v0', 1, undefined]) {
        const port = { ...base, specificationVersion: version };
        let error: unknown;
        try {
          give(name, port);
        } catch (e) {
          error = e;
        }
        expect(UnsupportedPortVersionError.isInstance(error), `${name} ${String(version)}`).toBe(true);
        expect(error).toMatchObject({
          port: name,
          provider: (base as { provider: string }).provider,
          version: String(version),
          supported: ['v1'],
        });
        expect((error as Error).message).toContain(`'${String(version)}'`);
        expect((error as Error).message).toMatch(/supported: 'v1'/);
      }
      expect(() => give(name, { ...base, specificationVersion: 'v1' })).not.toThrow();
    });
  }

  it('lists v1 for every port', () => {
    expect(Object.keys(SUPPORTED_PORT_VERSIONS).sort()).toEqual(Object.keys(PORTS).sort());
    for (const versions of Object.values(SUPPORTED_PORT_VERSIONS)) expect(versions).toEqual(['v1']);
  });
});

import { InvalidArgumentError } from '../errors';
import type { Embedder } from '../../ports/embedder';
import type { Generator } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge } from '../../ports/judge';
import type { SearchEngine } from '../../ports/search-engine';
import type { Store } from '../../ports/store';
import type { CallPolicy } from './call-policy';
import { checkAnswer, checkEmbeddings, checkHits, checkImage, checkVerdict } from './outputs';
import { checkPortVersion } from './port-version';
import { createReliableCaller, type ReliabilityDeps } from './reliable-call';

/**
 * A port that calls its adapter through the reliability rule (timeouts, retries, caps, rate
 * limits, typed failures, output checks): for using one adapter on its own, outside a Searcher
 * (inside one, `createSearcher` applies `config.calls` itself). Everything else of the adapter
 * (its `calls` record, its own methods) stays reachable on the returned object.
 */
export function withReliability<P extends SearchEngine>(
  port: P,
  name: 'searchEngine',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability<P extends Generator>(
  port: P,
  name: 'generator',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability<P extends Judge>(
  port: P,
  name: 'judge',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability<P extends ImageOps>(
  port: P,
  name: 'imageOps',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability<P extends Embedder>(
  port: P,
  name: 'embedder',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability<P extends Store>(
  port: P,
  name: 'store',
  policy?: Partial<CallPolicy>,
  deps?: ReliabilityDeps,
): P;
export function withReliability(
  port: SearchEngine | Generator | Judge | ImageOps | Embedder | Store,
  name: 'searchEngine' | 'generator' | 'judge' | 'imageOps' | 'embedder' | 'store',
  policy: Partial<CallPolicy> = {},
  deps: ReliabilityDeps = {},
): SearchEngine | Generator | Judge | ImageOps | Embedder | Store {
  if (typeof port !== 'object' || port === null)
    throw new InvalidArgumentError({ argument: 'port', message: 'expected an adapter object' });
  checkPortVersion(name, port);
  const caller = createReliableCaller(name, port.provider, policy, deps);
  // The adapter stays the prototype: its other members (records of calls, settings) are still there.
  const wrapped = Object.create(port) as Record<string, unknown>;
  switch (name) {
    case 'searchEngine': {
      const engine = port as SearchEngine;
      wrapped.doSearch = async (query: string, options: Parameters<SearchEngine['doSearch']>[1]) =>
        checkHits(
          await caller.call('search', (signal) => engine.doSearch(query, { ...options, signal }), {
            args: [query],
            signal: options?.signal,
          }),
          engine.provider,
        );
      break;
    }
    case 'generator': {
      const generator = port as Generator;
      wrapped.doAnswer = async (
        question: string,
        evidence: Parameters<Generator['doAnswer']>[1],
        options?: Parameters<Generator['doAnswer']>[2],
      ) =>
        checkAnswer(
          await caller.call(
            'answer',
            (signal) => generator.doAnswer(question, evidence, { ...options, signal }),
            { args: [question, evidence], signal: options?.signal },
          ),
          generator.provider,
        );
      break;
    }
    case 'judge': {
      const judge = port as Judge;
      wrapped.doScore = async (
        question: string,
        answer: string,
        reference: string,
        options?: Parameters<Judge['doScore']>[3],
      ) =>
        checkVerdict(
          await caller.call(
            'score',
            (signal) => judge.doScore(question, answer, reference, { ...options, signal }),
            { args: [question, answer, reference], signal: options?.signal },
          ),
          judge.provider,
        );
      break;
    }
    case 'imageOps': {
      const ops = port as ImageOps;
      wrapped.doCrop = async (
        image: Parameters<ImageOps['doCrop']>[0],
        bbox: Parameters<ImageOps['doCrop']>[1],
        options?: Parameters<ImageOps['doCrop']>[2],
      ) =>
        checkImage(
          await caller.call('crop', (signal) => ops.doCrop(image, bbox, { ...options, signal }), {
            args: [image],
            signal: options?.signal,
          }),
          'imageOps',
          ops.provider,
          'crop',
        );
      break;
    }
    case 'embedder': {
      const embedder = port as Embedder;
      wrapped.doEmbed = async (
        items: Parameters<Embedder['doEmbed']>[0],
        options?: Parameters<Embedder['doEmbed']>[1],
      ) =>
        checkEmbeddings(
          await caller.call('embed', (signal) => embedder.doEmbed(items, { ...options, signal }), {
            args: [items],
            signal: options?.signal,
          }),
          items.length,
          embedder.dimensions,
          embedder.provider,
        );
      break;
    }
    case 'store': {
      const store = port as Store;
      wrapped.doAppend = (
        records: Parameters<Store['doAppend']>[0],
        options?: Parameters<Store['doAppend']>[1],
      ) =>
        caller.call('append', (signal) => store.doAppend(records, { ...options, signal }), {
          signal: options?.signal,
        });
      wrapped.doQuery = (query: Parameters<Store['doQuery']>[0], options?: Parameters<Store['doQuery']>[1]) =>
        caller.call('query', (signal) => store.doQuery(query, { ...options, signal }), {
          signal: options?.signal,
        });
      wrapped.doPutBlob = (
        runId: string,
        key: string,
        bytes: Uint8Array,
        options?: Parameters<Store['doPutBlob']>[3],
      ) =>
        caller.call('putBlob', (signal) => store.doPutBlob(runId, key, bytes, { ...options, signal }), {
          signal: options?.signal,
        });
      wrapped.doGetBlob = (runId: string, key: string, options?: Parameters<Store['doGetBlob']>[2]) =>
        caller.call('getBlob', (signal) => store.doGetBlob(runId, key, { ...options, signal }), {
          signal: options?.signal,
        });
      break;
    }
    default:
      throw new InvalidArgumentError({
        argument: 'name',
        message: `must be a port name (searchEngine, generator, judge, imageOps, embedder, store), got ${String(name)}`,
      });
  }
  return wrapped as unknown as SearchEngine;
}

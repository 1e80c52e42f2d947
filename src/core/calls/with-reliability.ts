import { InvalidArgumentError } from '../errors';
import type { CallOptions } from '../../ports/common';
import type { Embedder } from '../../ports/embedder';
import type { Generator } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge } from '../../ports/judge';
import type { SearchEngine } from '../../ports/search-engine';
import type { Store } from '../../ports/store';
import type { CallPolicy } from './call-policy';
import { checkAnswer, checkEmbeddings, checkHits, checkImage, checkVerdict } from './outputs';
import { checkPortVersion } from './port-version';
import { createReliableCaller, type ReliabilityDeps, type ReliableCaller } from './reliable-call';

/**
 * An adapter method called through `caller`: `run` gets the method's options with the attempt's
 * signal (it fires on the caller's abort and on the attempt's timeout); `args` count toward the
 * tokens-per-minute limit.
 */
function callThrough<O extends CallOptions, T>(
  caller: ReliableCaller,
  operation: string,
  options: O | undefined,
  run: (options: O) => Promise<T>,
  args?: readonly unknown[],
): Promise<T> {
  return caller.call(operation, (signal) => run({ ...options, signal } as O), {
    ...(args && { args }),
    signal: options?.signal,
  });
}

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
          await callThrough(caller, 'search', options, (o) => engine.doSearch(query, o), [query]),
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
          await callThrough(caller, 'answer', options, (o) => generator.doAnswer(question, evidence, o), [
            question,
            evidence,
          ]),
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
          await callThrough(caller, 'score', options, (o) => judge.doScore(question, answer, reference, o), [
            question,
            answer,
            reference,
          ]),
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
          await callThrough(caller, 'crop', options, (o) => ops.doCrop(image, bbox, o), [image]),
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
          await callThrough(caller, 'embed', options, (o) => embedder.doEmbed(items, o), [items]),
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
      ) => callThrough(caller, 'append', options, (o) => store.doAppend(records, o));
      wrapped.doQuery = (query: Parameters<Store['doQuery']>[0], options?: Parameters<Store['doQuery']>[1]) =>
        callThrough(caller, 'query', options, (o) => store.doQuery(query, o));
      wrapped.doPutBlob = (
        runId: string,
        key: string,
        bytes: Uint8Array,
        options?: Parameters<Store['doPutBlob']>[3],
      ) => callThrough(caller, 'putBlob', options, (o) => store.doPutBlob(runId, key, bytes, o));
      wrapped.doGetBlob = (runId: string, key: string, options?: Parameters<Store['doGetBlob']>[2]) =>
        callThrough(caller, 'getBlob', options, (o) => store.doGetBlob(runId, key, o));
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

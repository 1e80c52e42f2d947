import { AbortedError, PortOutputError, ProviderCallError, SearcherError, type PortName } from '../errors';
import { isConnectionError } from '../reliability/reliable-port';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import type { SearchEngine } from '../../ports/search-engine';
import type { BoundingBox, Evidence, PageImage, SearchHit } from '../../ports/types';

/**
 * The core's wrappers around port calls: every adapter gets the same abort handling, error
 * typing and output validation. An adapter's unknown exception becomes a ProviderCallError
 * naming the port and provider; an unusable answer becomes a PortOutputError.
 */
export async function callPort<T>(port: PortName, provider: string, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
  if (signal?.aborted) throw new AbortedError(`${port} '${provider}' call`, { cause: signal.reason });
  try {
    return await run();
  } catch (error) {
    if (signal?.aborted) throw new AbortedError(`${port} '${provider}' call`, { cause: error });
    if (SearcherError.isInstance(error)) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new ProviderCallError({ port, provider, message, isRetryable: isConnectionError(error), cause: error });
  }
}

function checkImage(image: unknown, port: PortName, provider: string, field: string): PageImage {
  const i = image as PageImage;
  if (
    typeof i !== 'object' ||
    i === null ||
    typeof i.mimeType !== 'string' ||
    !(Number.isInteger(i.width) && i.width > 0) ||
    !(Number.isInteger(i.height) && i.height > 0) ||
    !(i.bytes instanceof Uint8Array)
  ) {
    throw new PortOutputError({ port, provider, field, message: 'expected {mimeType, width > 0, height > 0 (integers), bytes: Uint8Array}' });
  }
  return i;
}

export async function searchPages(engine: SearchEngine, query: string, topK: number, signal?: AbortSignal): Promise<SearchHit[]> {
  const hits = await callPort('searchEngine', engine.provider, signal, () => engine.doSearch(query, { topK, signal }));
  if (!Array.isArray(hits)) {
    throw new PortOutputError({ port: 'searchEngine', provider: engine.provider, field: 'hits', message: 'expected an array of hits' });
  }
  hits.forEach((hit, i) => {
    if (typeof hit?.basename !== 'string' || hit.basename.length === 0) {
      throw new PortOutputError({ port: 'searchEngine', provider: engine.provider, field: `hits[${i}].basename`, message: 'every hit needs a non-empty basename' });
    }
    if (hit.image !== undefined) checkImage(hit.image, 'searchEngine', engine.provider, `hits[${i}].image`);
  });
  return hits;
}

export async function cropImage(imageOps: ImageOps, image: PageImage, region: BoundingBox, minOutputSide: number | undefined, signal?: AbortSignal): Promise<PageImage> {
  const result = await callPort('imageOps', imageOps.provider, signal, () => imageOps.doCrop(image, region, { minOutputSide, signal }));
  return checkImage(result, 'imageOps', imageOps.provider, 'crop');
}

export async function generateAnswer(generator: Generator, question: string, evidence: readonly Evidence[], signal?: AbortSignal): Promise<GeneratorAnswer> {
  const result = await callPort('generator', generator.provider, signal, () => generator.doAnswer(question, evidence, { signal }));
  if (typeof result?.answer !== 'string') {
    throw new PortOutputError({ port: 'generator', provider: generator.provider, field: 'answer', message: 'expected a string' });
  }
  return result;
}

/** A judge answer that is not a number in [0, 1] is a failed call, never a score. */
export async function judgeAnswer(judge: Judge, question: string, answer: string, reference: string, signal?: AbortSignal): Promise<JudgeVerdict> {
  const verdict = await callPort('judge', judge.provider, signal, () => judge.doScore(question, answer, reference, { signal }));
  const score = verdict?.score;
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1) {
    throw new PortOutputError({ port: 'judge', provider: judge.provider, field: 'score', message: `expected a number in [0, 1], got ${String(score)}` });
  }
  return verdict;
}

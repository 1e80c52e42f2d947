import { ConfigValidationError } from '../core/errors';
import type { RunConfig } from './config';
import type { RunEnvironment } from './environment';
import type { RunOptions } from './progress';

const ENGINE = 'searcher.adapters.searchEngine';

/**
 * Checks, before a run on your own data starts, what its search engine holds: at least one page
 * (an empty page folder, corpus or index would make every search come back empty), and every
 * golden page the questions name (NDCG cannot reward finding a page the index does not have). A
 * missing golden page refuses the run, counting them and naming the first, unless
 * `dataset.allowMissingGolden` is set (then the count is logged). The SQLite FTS index and the
 * mock engine's pages are read; an HTTP retriever cannot list its pages and is not checked (said
 * in the log).
 */
export async function checkRunIndex(
  config: RunConfig,
  env: RunEnvironment,
  options: RunOptions = {},
): Promise<void> {
  if (env.kind !== 'dataset' || !config.dataset) return;
  const engine = config.searcher.adapters.searchEngine;
  const golden = new Set(env.all.flatMap((p) => p.goldenBasenames ?? []));
  let pages: number;
  let missing: string[];
  let field: string;
  if (engine === undefined || engine.type === 'mock') {
    const names = new Set((engine?.pages ?? []).map((p) => p.basename));
    pages = names.size + Object.keys(engine?.knowledgeBase ?? {}).length;
    missing = [...golden].filter((b) => !names.has(b));
    field = engine === undefined ? ENGINE : `${ENGINE}.pages`;
  } else if (engine.type === 'sqlite-fts') {
    const { inspectPageIndex } = await import('../adapters/sqlite-fts/index');
    ({ pages, missing } = inspectPageIndex(engine.dbPath, golden));
    field = `${ENGINE}.${engine.pagesDir !== undefined ? 'pagesDir' : engine.corpusPath !== undefined ? 'corpusPath' : 'dbPath'}`;
  } else {
    if (golden.size > 0)
      options.onLog?.(
        `golden pages: not checked against the index (${ENGINE} is '${engine.type}', which cannot list its pages)`,
      );
    return;
  }
  if (pages === 0)
    throw new ConfigValidationError({
      issues: [
        {
          field,
          message:
            engine === undefined
              ? 'a run on your own data searches your pages: set it (sqlite-fts with pagesDir (a folder of pages) or corpusPath (a JSONL corpus), or search-r1 for a retriever you serve); the default mock engine holds none'
              : 'the search engine holds no pages, so every search would come back empty; index your pages (a page folder, a JSONL corpus) or point it at an index that has them',
        },
      ],
    });
  if (missing.length === 0) return;
  const missingSet = new Set(missing);
  const naming = env.all.filter((p) => p.goldenBasenames?.some((b) => missingSet.has(b)));
  const first = naming[0]!;
  const text = `${missing.length} of the ${golden.size} golden pages, named by ${naming.length} of ${env.all.length} questions, are not in the index of ${field} (${pages} pages), e.g. '${first.goldenBasenames!.find((b) => missingSet.has(b))}' of question '${first.uid}'`;
  if (config.dataset.allowMissingGolden) {
    options.onLog?.(`warning: ${text}; NDCG is 0 for those questions (dataset.allowMissingGolden)`);
    return;
  }
  throw new ConfigValidationError({
    issues: [
      {
        field: 'dataset.allowMissingGolden',
        message: `${text}: NDCG could never reward finding them. Use the index's page names (an image page's file name 'name.png', a text page's 'name.txt', a corpus passage's id), add the missing pages, or set dataset.allowMissingGolden: true to train anyway`,
      },
    ],
  });
}

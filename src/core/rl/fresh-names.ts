import type { Random } from '../random';

/** A demonstration as SFT takes it (`SftExample` of policy-update.ts): its tokens and the positions trained. */
export interface SftExample {
  inputIds: number[];
  positions: number[];
}

/**
 * Fresh names for demonstrations (docs/method.md#copying-names): each epoch, every name that a
 * demonstration's actions copy from its prompt (a word token at a trained position that also
 * stands in the prompt, before the first trained position, and in a page read after it:
 * `copiedNames`, the question's entity written into the query and found again on the page) is
 * replaced, everywhere in that demonstration (the pages read included), by a word drawn at random.
 * A copied word that no page shows is the question's wording ("Who", "headquartered"), not a
 * name: renamed, a rare question form lost its words and the policy wrote `433 which year` for
 * `In which year`. The question, the query and the pages stay consistent with each other, but the
 * name itself no longer predicts anything: a small policy can only imitate the demonstrations by
 * copying what it is asked about, not by memorising which names its training questions ask about.
 * Words an action takes from a page alone (a region's name in `<bbox>`, the roles being a fixed
 * set the policy chooses from) are left as they are.
 */
export interface FreshNames {
  /** The demonstration with this epoch's names (a new object; the input is not changed). */
  apply(example: SftExample, random: Random): SftExample;
  /** The words names are drawn from (and the only ones renamed): the words given, less the shared prefix's. */
  readonly pool: readonly number[];
}

/**
 * The largest share of the demonstrations a word may be copied in and still be a name (renamed,
 * drawn): an organisation or a year is copied by a few demonstrations, an attribute word
 * ("revenue", "founded") by a sixth of them. Those many share say how a question is asked and
 * what to do about it (which page word, which region to crop): renamed, they hid that cue, and
 * the slide policy stopped cropping (small print after RL 0.0-3.9%; with 0.1, 22.5-35.2% on the
 * validation split). Measured: docs/method.md#copying-names.
 */
export const NAME_SHARE = 0.1;

/**
 * The renamer of a set of demonstrations over `words`, the token ids that are whole words (a
 * vocabulary tokenizer's word tokens; bytes, tags and special tokens are never renamed): a copied
 * word is renamed to one of them. Tokens of the prefix that every demonstration shares (the
 * instructions) are never renamed nor drawn: renaming them would rewrite the instructions; nor are
 * words copied in more than `maxShare` of the demonstrations (`NAME_SHARE`): they are not names.
 *
 * Drawn from every word, not only those the demonstrations hold, so that no word's embedding is
 * special: a word that only a held-out question names is trained as a name among the others (in
 * contexts drawn at random, which tell nothing of its own pages), not left at its initial value,
 * where the copy learnt on trained words does not reach (measured: docs/method.md#copying-names).
 */
export function freshNames(
  examples: readonly SftExample[],
  words: Iterable<number>,
  maxShare = NAME_SHARE,
): FreshNames {
  const fixed = new Set(sharedPrefix(examples));
  const given = new Set(words);
  const copiedIn = new Map<number, number>();
  for (const e of examples)
    for (const id of copiedWords(e, (w) => given.has(w) && !fixed.has(w)))
      copiedIn.set(id, (copiedIn.get(id) ?? 0) + 1);
  const common = new Set([...copiedIn].filter(([, n]) => n > maxShare * examples.length).map(([id]) => id));
  const pool = [...given].filter((id) => !fixed.has(id) && !common.has(id)).sort((a, b) => a - b);
  const isName = new Set(pool);
  return {
    pool,
    apply(example, random) {
      const copied = copiedNames(example, (id) => isName.has(id));
      if (copied.length === 0 || pool.length === 0) return example;
      const present = new Set(example.inputIds);
      const taken = new Set<number>();
      const rename = new Map<number, number>();
      for (const id of copied) {
        // A word not already in the demonstration (else two names would merge), nor drawn twice.
        let drawn = id;
        for (let tries = 0; tries < 32; tries++) {
          const candidate = pool[random.nextInt(pool.length)]!;
          if (!present.has(candidate) && !taken.has(candidate)) {
            drawn = candidate;
            break;
          }
        }
        taken.add(drawn);
        rename.set(id, drawn);
      }
      return { inputIds: example.inputIds.map((id) => rename.get(id) ?? id), positions: example.positions };
    },
  };
}

/**
 * The words a demonstration copies from its prompt: word tokens at a trained position that also
 * stand before the first trained position, in the order they are first written.
 */
export function copiedWords(example: SftExample, isName: (id: number) => boolean): number[] {
  const first = Math.min(...example.positions);
  const prompt = new Set(example.inputIds.slice(0, Number.isFinite(first) ? first : 0));
  const copied: number[] = [];
  const seen = new Set<number>();
  for (const p of [...example.positions].sort((a, b) => a - b)) {
    const id = example.inputIds[p]!;
    if (isName(id) && prompt.has(id) && !seen.has(id)) {
      seen.add(id);
      copied.push(id);
    }
  }
  return copied;
}

/**
 * The copied words (`copiedWords`) that a page read after the first trained position shows again
 * (an untrained position: an observation): the names that link the question to its page, which
 * fresh names rename. A copied word no page shows is the question's wording.
 */
export function copiedNames(example: SftExample, isName: (id: number) => boolean): number[] {
  const first = Math.min(...example.positions);
  const start = Number.isFinite(first) ? first : 0;
  const trained = new Set(example.positions);
  const observed = new Set(example.inputIds.filter((_, i) => i > start && !trained.has(i)));
  return copiedWords(example, (id) => isName(id) && observed.has(id));
}

/** The token ids every example starts with (empty for fewer than two examples: nothing is known to be shared). */
function sharedPrefix(examples: readonly SftExample[]): number[] {
  if (examples.length < 2) return [];
  const first = examples[0]!.inputIds;
  let length = first.length;
  for (const e of examples.slice(1)) {
    let k = 0;
    while (k < length && k < e.inputIds.length && e.inputIds[k] === first[k]) k++;
    length = k;
  }
  return first.slice(0, length);
}

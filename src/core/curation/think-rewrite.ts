/**
 * The think-only rewrite safety post-pass (docs/method.md#think-only-rewriting): a rewrite may
 * change only the text inside `<think>…</think>`.
 */

/** An action tag inside a think, any case. */
export const ACTION_TAG_PATTERN = /<\/?\s*(search|bbox|search_complete|answer)\b/i;

/**
 * New observation claims. The original copies were double-escaped (`\\b`) and never matched; these are
 * tested on real English, Korean and Chinese text.
 */
export const OBSERVATION_CLAIM_PATTERNS: Readonly<Record<'en' | 'ko' | 'zh', RegExp>> = Object.freeze({
  en: /\b(the image shows|in the image|i can see|visible in the image|it clearly shows)\b/i,
  // 보이 as written in the rule misses 보인다/보였다/보임 (the syllable 인 is not 이 + ㄴ as text), so those forms are listed too.
  ko: /(이미지에서|사진에서)[^.!?。\n]*?(보이|보인|보였|보임|확인)/u,
  zh: /(图中|图片中)[^。！？\n]*?(显示|可以看到)/u,
});

const THINK = /<think>([\s\S]*?)<\/think>/g;

export function thinkSpans(text: string): string[] {
  return [...text.matchAll(THINK)].map((m) => m[1]!);
}

/** The text with every think emptied: what must stay byte-identical. */
export function outsideThinks(text: string): string {
  return text.replace(THINK, '<think></think>');
}

export function hasObservationClaim(text: string): boolean {
  return Object.values(OBSERVATION_CLAIM_PATTERNS).some((pattern) => pattern.test(text));
}

export type RewriteRejection =
  | 'outside_changed'
  | 'think_count_changed'
  | 'action_tag_in_original_think'
  | 'action_tag_added'
  | 'observation_claim_added';

export interface RewriteCheck {
  /** `null` when the row is dropped. */
  text: string | null;
  /** Thinks kept from the rewrite / reverted to the original. */
  kept: number;
  reverted: number;
  /** Every rejection, by reason (a dropped row counts once under its reason). */
  rejections: RewriteRejection[];
}

/**
 * Checks one rewritten assistant turn against its original. Outside text changed or a different
 * number of thinks: the rewrite is refused (the original is kept). An action tag in a rewritten
 * think drops the row when the original think had one too (the data was polluted already), else
 * reverts that think; a new observation claim (one the original think did not make) reverts that think.
 */
export function checkThinkRewrite(original: string, rewritten: string): RewriteCheck {
  const before = thinkSpans(original);
  const after = thinkSpans(rewritten);
  if (before.length !== after.length)
    return { text: original, kept: 0, reverted: before.length, rejections: ['think_count_changed'] };
  if (outsideThinks(original) !== outsideThinks(rewritten))
    return { text: original, kept: 0, reverted: before.length, rejections: ['outside_changed'] };
  const rejections: RewriteRejection[] = [];
  const chosen: string[] = [];
  for (let i = 0; i < after.length; i++) {
    const old = before[i]!;
    const next = after[i]!;
    if (ACTION_TAG_PATTERN.test(next)) {
      if (ACTION_TAG_PATTERN.test(old))
        return { text: null, kept: 0, reverted: 0, rejections: ['action_tag_in_original_think'] };
      rejections.push('action_tag_added');
      chosen.push(old);
    } else if (hasObservationClaim(next) && !hasObservationClaim(old)) {
      rejections.push('observation_claim_added');
      chosen.push(old);
    } else chosen.push(next);
  }
  let index = 0;
  const text = rewritten.replace(THINK, () => `<think>${chosen[index++]!}</think>`);
  return { text, kept: after.length - rejections.length, reverted: rejections.length, rejections };
}

export const THINK_REWRITE_INSTRUCTIONS =
  'Rewrite only the reasoning inside <think>…</think> so it is clear and concise. Keep every other character exactly as it is, keep the same number of <think> blocks, never write an action tag (<search>, <bbox>, <search_complete>, <answer>) inside a think, and do not claim to see anything the original reasoning did not mention. Return the whole text.';

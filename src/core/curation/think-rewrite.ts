/**
 * The think-only rewrite safety post-pass (docs/method.md#think-only-rewriting): a rewrite may
 * change only the text inside `<think>…</think>`.
 */
import { replaceTagSpans, tagSpans } from '../protocol/tag-spans';

/** An action tag inside a think, any case. */
export const ACTION_TAG_PATTERN = /<\/?\s*(search|bbox|search_complete|answer)\b/i;

/** What an observation-claim check needs of a pattern: a RegExp, or a matcher built like one. */
export interface ClaimPattern {
  /** Whether `text` makes the claim. */
  test(text: string): boolean;
  readonly source: string;
}

/**
 * "A place, then later in the same sentence a verb of seeing", or any of `anywhere`. As one regex
 * (`place[^.!?]*?verb`) this is quadratic: every place in a long sentence without the verb rescans
 * it to the end (issue 41). Here each sentence is read once: its first place, then the verb after it.
 */
function placeThenVerb(parts: {
  place: string;
  verb: string;
  sentenceEnd: RegExp;
  anywhere: readonly string[];
}): ClaimPattern {
  const place = new RegExp(parts.place, 'u');
  const verb = new RegExp(parts.verb, 'u');
  const anywhere = new RegExp(parts.anywhere.join('|'), 'u');
  return {
    source: `${parts.place}…${parts.verb}|${anywhere.source}`,
    test(text: string): boolean {
      if (anywhere.test(text)) return true;
      return text.split(parts.sentenceEnd).some((sentence) => {
        const found = place.exec(sentence);
        return found !== null && verb.test(sentence.slice(found.index + found[0].length));
      });
    },
  };
}

/**
 * New observation claims: a think that says it sees something in a page (docs/method.md#think-only-rewriting: "이미지에서
 * 보인다 / I can see / the image shows" must not be added). The rule's own phrases and the forms a
 * rewriting model uses as well ("The picture shows", "I see", "is visible in", "如图所示"), each
 * tested on real sentences in think-rewrite.test.ts. The original copies were double-escaped
 * (`\\b`) and never matched. A false match only keeps the original think, so the patterns lean broad.
 */
export const OBSERVATION_CLAIM_PATTERNS: Readonly<Record<'en' | 'ko' | 'zh', ClaimPattern>> = Object.freeze({
  en: new RegExp(
    [
      // the rule's phrases
      'the image shows',
      'in the image',
      'i can see',
      'visible in the image',
      'it clearly shows',
      // a page, picture or crop that shows / displays / depicts ... something
      '(?:the|this|that) (?:image|picture|photo(?:graph)?|screenshot|slide|page|figure|chart|graph|diagram|table|crop(?:ped (?:region|area|image))?)s? (?:here |above |clearly |also |now )?(?:shows?|displays?|depicts?|reveals?|illustrates?|contains?|presents?|lists?|reads?|says)',
      'in (?:the|this) (?:picture|photo|screenshot|figure|chart|crop|cropped (?:region|area|image)|slide image)',
      '(?:i|we) (?:can |could |now |clearly )*(?:see|saw|notice|noticed|observe|observed|spot|spotted)',
      "(?:i'm|i am|we're|we are) (?:looking at|seeing)",
      '(?:is|are|was|were) (?:clearly |also )?(?:visible|shown|displayed|depicted|pictured)',
      'visible (?:in|on) the',
      'as (?:shown|seen|displayed) (?:in|on)',
      'looking at the (?:image|picture|photo|screenshot|slide|page|crop|chart|figure)',
    ]
      .map((phrase) => `\\b${phrase}\\b`)
      .join('|'),
    'i',
  ),
  // 보이 as written in the rule misses 보인다/보였다/보임/보입니다 (the syllable 인 is not 이 + ㄴ as
  // text), so those forms are listed too; a place (이미지에서, 화면에, 그림을 보면) then a verb of seeing,
  // or a thing seen (…이/가 보인다, …을 볼 수 있다) anywhere.
  ko: placeThenVerb({
    place:
      '(?:이미지|사진|그림|화면|슬라이드|페이지|도표|차트|스크린샷|캡처|크롭)(?:에서|에는|에|상에서|속에서|을 보면|를 보면|을 보니|를 보니)',
    verb: '(?:보이|보인|보였|보임|보입|확인|나타나|나타난|나와 있|나와있|표시되|표시된|적혀|볼 수 있|알 수 있)',
    sentenceEnd: /[.!?。\n]/,
    anywhere: [
      '(?:이미지|사진|그림|화면|슬라이드|페이지|도표|차트|스크린샷|캡처|크롭)[을를] (?:보면|보니|보았|봤|살펴보)',
      '[이가] (?:잘 |분명히 |명확히 )?(?:보인|보이|보였|보임|보입)',
      '[을를] 볼 수 있',
    ],
  }),
  zh: placeThenVerb({
    place:
      '(?:图中|图片中|图像中|照片中|画面中|截图中|幻灯片中|页面中|图上|图片上|页面上|截图上|幻灯片上|图里|图片里)',
    verb: '(?:显示|可以看到|能看到|看到|可见|展示|呈现|写着|标着|列出|标注)',
    sentenceEnd: /[。！？\n]/,
    anywhere: [
      '(?:我|我们)(?:可以|能|能够|已经|清楚地)?(?:看到|看见|注意到|观察到)',
      '如图所示',
      '从图(?:片|像)?中?(?:可以|能)?看出',
      '图(?:片|像)?(?:清楚地)?(?:显示|展示|表明)',
    ],
  }),
});

/** The body of each `<think>` span of `text`, in order. */
export function thinkSpans(text: string): string[] {
  return tagSpans(text, '<think>', '</think>').map((s) => s.body);
}

/** The text with every think emptied: what must stay byte-identical. */
export function outsideThinks(text: string): string {
  return replaceTagSpans(text, '<think>', '</think>', () => '<think></think>');
}

/** Whether `text` claims to have seen something (`OBSERVATION_CLAIM_PATTERNS`). */
export function hasObservationClaim(text: string): boolean {
  return Object.values(OBSERVATION_CLAIM_PATTERNS).some((pattern) => pattern.test(text));
}

/** Why a rewritten think was reverted to the original, or its row dropped. */
export type RewriteRejection =
  | 'outside_changed'
  | 'think_count_changed'
  | 'action_tag_in_original_think'
  | 'action_tag_added'
  | 'observation_claim_added';

/**
 * The text after the safety post-pass: each think kept from the rewrite or reverted, with the
 * reasons.
 */
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
 * Checks one rewritten assistant turn against its original. An action tag in an original think
 * drops the row whatever the rewrite says (the data was polluted already, and there is no clean
 * think to roll back to: docs/method.md#think-only-rewriting). Outside text changed or a different number of thinks: the
 * rewrite is refused (the original is kept). An action tag in a rewritten think reverts that think;
 * so does a new observation claim (one the original think did not make).
 */
export function checkThinkRewrite(original: string, rewritten: string): RewriteCheck {
  const before = thinkSpans(original);
  const after = thinkSpans(rewritten);
  if (before.some((think) => ACTION_TAG_PATTERN.test(think)))
    return { text: null, kept: 0, reverted: 0, rejections: ['action_tag_in_original_think'] };
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
      rejections.push('action_tag_added');
      chosen.push(old);
    } else if (hasObservationClaim(next) && !hasObservationClaim(old)) {
      rejections.push('observation_claim_added');
      chosen.push(old);
    } else chosen.push(next);
  }
  let index = 0;
  const text = replaceTagSpans(rewritten, '<think>', '</think>', () => `<think>${chosen[index++]!}</think>`);
  return { text, kept: after.length - rejections.length, reverted: rejections.length, rejections };
}

/**
 * The instructions a rewriting model gets with each row: rewrite the thinks only, keep the rest
 * exactly.
 */
export const THINK_REWRITE_INSTRUCTIONS =
  'Rewrite only the reasoning inside <think>…</think> so it is clear and concise. Keep every other character exactly as it is, keep the same number of <think> blocks, never write an action tag (<search>, <bbox>, <search_complete>, <answer>) inside a think, and do not claim to see anything the original reasoning did not mention. Return the whole text.';

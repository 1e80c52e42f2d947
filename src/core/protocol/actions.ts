import type { BoundingBox } from '../../ports/types';
import {
  LOCATION_BINS,
  markedBoxText,
  locationBinsText,
  normaliseRegionName,
  parseLocationBins,
  requireRegionName,
} from './location';
import type { ActionTag } from './tags';

/** One parsed action of a turn: a search, a crop (`bbox`), the end of the search, or an answer. */
export type Action =
  | { type: 'search'; query: string }
  /**
   * `unit: 'location'`: `bbox` holds location-token bins (`<x1_k><y1_k><x2_k><y2_k>`, src/core/protocol/location.ts),
   * which the episode maps onto the shown image; otherwise pixels of the shown image.
   */
  | { type: 'bbox'; bbox: BoundingBox; unit?: 'location' }
  /**
   * A crop of the region the shown page marks with this name (`[footnote at <x1_k>…]`,
   * src/core/protocol/location.ts#regionMarkText), written `<bbox>footnote</bbox>`: the policy
   * chooses a region by what it is, and the episode crops the box the page gives it.
   */
  | { type: 'bbox'; region: string }
  | { type: 'search_complete' }
  | { type: 'answer'; answer: string };

/** Why a turn holds no valid action (docs/method.md#invalid-actions). */
export type InvalidActionReason =
  | 'no_action'
  | 'unclosed_tag'
  | 'unclosed_think'
  | 'empty_search'
  | 'bbox_not_four_numbers'
  | 'bbox_negative'
  | 'bbox_empty_area'
  | 'bbox_outside_image'
  | 'bbox_no_image'
  | 'bbox_unknown_region'
  | 'search_complete_not_true'
  | 'action_not_allowed';

/** A turn with one action to run. */
export interface ValidTurn {
  kind: 'valid';
  /** The text of the leading `<think>` block, if any. */
  think: string | null;
  action: Action;
  /** The raw text of further action tags in the same turn: recorded, never run. */
  ignoredActions: string[];
  /** Non-whitespace text outside `<think>` and the action (recorded; does not invalidate the turn). */
  strayText: string;
}

/** A turn with no action to run: why, and the sentence the corrective observation shows. */
export interface InvalidTurn {
  kind: 'invalid';
  think: string | null;
  reason: InvalidActionReason;
  /** A sentence for the corrective observation. */
  message: string;
}

/** What `parseAction` gives: a valid turn (one action) or an invalid one with its reason. */
export type ParsedTurn = ValidTurn | InvalidTurn;

const ACTION_OPEN = /<(search_complete|search|bbox|answer)>/i;
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/** Case-insensitive indexOf that keeps the original indices (toLowerCase can change lengths). */
function indexOfIgnoreCase(text: string, needle: string, from: number): number {
  const found = text.slice(from).search(new RegExp(needle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'i'));
  return found < 0 ? -1 : from + found;
}

function invalid(think: string | null, reason: InvalidActionReason, message: string): InvalidTurn {
  return { kind: 'invalid', think, reason, message };
}

/**
 * Parses one policy turn: an optional `<think>…</think>`, then exactly one action. Only the
 * first action runs; any further action tags are returned in `ignoredActions`. This function
 * never throws: whatever the text, the result is a valid turn or an invalid one with a reason.
 */
export function parseAction(text: string): ParsedTurn {
  if (typeof text !== 'string') return invalid(null, 'no_action', 'the turn was not text');
  // Every think block is removed before looking for the action: a tag inside any of them is
  // thinking, not acting. `think` is their text, joined.
  let rest = '';
  const thinks: string[] = [];
  let cursor = 0;
  for (;;) {
    const open = text.slice(cursor).search(/<think>/i);
    if (open < 0) {
      rest += text.slice(cursor);
      break;
    }
    const openAt = cursor + open;
    const before = text.slice(cursor, openAt);
    // A think block after the action does not hide it: stop at the first action tag.
    if (ACTION_OPEN.test(before)) {
      rest += text.slice(cursor);
      break;
    }
    const bodyAt = openAt + '<think>'.length;
    const close = text.slice(bodyAt).search(/<\/think>/i);
    if (close < 0) {
      const partial = [...thinks, text.slice(bodyAt).trim()].filter((t) => t.length > 0).join('\n');
      return invalid(
        partial || null,
        'unclosed_think',
        'a <think> block was opened but never closed with </think>',
      );
    }
    rest += `${before} `;
    thinks.push(text.slice(bodyAt, bodyAt + close).trim());
    cursor = bodyAt + close + '</think>'.length;
  }
  const think = thinks.length > 0 ? thinks.join('\n') : null;

  const match = ACTION_OPEN.exec(rest);
  if (!match) {
    return invalid(
      think,
      'no_action',
      'no action was given; end the turn with one of <search>query</search>, <bbox>[x1, y1, x2, y2]</bbox> or <search_complete>true</search_complete>',
    );
  }
  const tag = match[1]!.toLowerCase() as ActionTag;
  const bodyStart = match.index + match[0].length;
  const closeTag = `</${tag}>`;
  const closeIndex = indexOfIgnoreCase(rest, closeTag, bodyStart);
  if (closeIndex < 0)
    return invalid(think, 'unclosed_tag', `<${tag}> was opened but never closed with ${closeTag}`);
  const body = rest.slice(bodyStart, closeIndex);
  const before = rest.slice(0, match.index);
  const after = rest.slice(closeIndex + closeTag.length);

  const ignoredActions: string[] = [];
  const extra = new RegExp(ACTION_OPEN.source, 'gi');
  let extraMatch: RegExpExecArray | null;
  let afterRest = after;
  while ((extraMatch = extra.exec(afterRest)) !== null) {
    const extraTag = extraMatch[1]!.toLowerCase();
    const end = indexOfIgnoreCase(afterRest, `</${extraTag}>`, extraMatch.index);
    const stop = end < 0 ? afterRest.length : end + extraTag.length + 3;
    ignoredActions.push(afterRest.slice(extraMatch.index, stop));
    afterRest = afterRest.slice(0, extraMatch.index) + afterRest.slice(stop);
    extra.lastIndex = extraMatch.index;
  }
  const strayText = `${before} ${afterRest}`.replace(/\s+/g, ' ').trim();

  const valid = (action: Action): ValidTurn => ({ kind: 'valid', think, action, ignoredActions, strayText });
  switch (tag) {
    case 'search': {
      const query = body.replace(/\s+/g, ' ').trim();
      if (query.length === 0)
        return invalid(
          think,
          'empty_search',
          'the search query was empty; write the query between <search> and </search>',
        );
      return valid({ type: 'search', query });
    }
    case 'answer':
      return valid({ type: 'answer', answer: body.trim() });
    case 'search_complete': {
      if (body.trim().toLowerCase() !== 'true') {
        return invalid(
          think,
          'search_complete_not_true',
          'write <search_complete>true</search_complete> to finish, or search again to continue',
        );
      }
      return valid({ type: 'search_complete' });
    }
    case 'bbox': {
      // A box written as the page marks it (`footnote at <x1_3>...`): the box is cropped, the name not read.
      const bins = parseLocationBins(markedBoxText(body) ?? body);
      if (bins !== null && typeof bins !== 'string')
        return valid({ type: 'bbox', bbox: bins, unit: 'location' });
      const bbox = bins ?? parseBoundingBox(body);
      const region = bbox === 'format' ? normaliseRegionName(body) : null;
      if (region !== null) return valid({ type: 'bbox', region });
      if (typeof bbox === 'string')
        return invalid(
          think,
          bbox === 'negative'
            ? 'bbox_negative'
            : bbox === 'empty'
              ? 'bbox_empty_area'
              : 'bbox_not_four_numbers',
          bboxMessage(bbox),
        );
      return valid({ type: 'bbox', bbox });
    }
  }
}

/** The corrective sentence for a `<bbox>` body that is not a box: not four numbers, negative, or of no area. */
export function bboxMessage(problem: 'format' | 'negative' | 'empty'): string {
  if (problem === 'negative') return 'bbox coordinates must not be negative';
  if (problem === 'empty') return 'bbox must have x2 > x1 and y2 > y1';
  return `bbox must be four numbers [x1, y1, x2, y2] in the pixel space of the image you were shown, four location tokens <x1_k><y1_k><x2_k><y2_k>, k from 0 to ${LOCATION_BINS}, or the name of a region the page marks`;
}

/** `[x1, y1, x2, y2]` (brackets optional, commas or spaces) -> numbers, or what is wrong. */
export function parseBoundingBox(body: string): BoundingBox | 'format' | 'negative' | 'empty' {
  const inner = body.trim().replace(/^\[/, '').replace(/\]$/, '');
  const parts = inner.split(/[\s,]+/).filter((p) => p.length > 0);
  if (parts.length !== 4 || !parts.every((p) => NUMBER.test(p))) return 'format';
  // `+ 0` turns -0 into 0: a coordinate has no sign of zero.
  const [x1, y1, x2, y2] = parts.map((p) => Number(p) + 0) as [number, number, number, number];
  if (![x1, y1, x2, y2].every(Number.isFinite)) return 'format';
  if (x1 < 0 || y1 < 0 || x2 < 0 || y2 < 0) return 'negative';
  if (x2 <= x1 || y2 <= y1) return 'empty';
  return [x1, y1, x2, y2];
}

/** Renders an action back to its tag form (used by scripted policies and SFT export). */
export function renderAction(action: Action): string {
  switch (action.type) {
    case 'search':
      return `<search>${action.query}</search>`;
    case 'bbox':
      if ('region' in action) return `<bbox>${requireRegionName(action.region, 'action.region')}</bbox>`;
      return action.unit === 'location'
        ? `<bbox>${locationBinsText(action.bbox)}</bbox>`
        : `<bbox>[${action.bbox.join(', ')}]</bbox>`;
    case 'search_complete':
      return '<search_complete>true</search_complete>';
    case 'answer':
      return `<answer>${action.answer}</answer>`;
  }
}

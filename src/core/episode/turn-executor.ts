import type { PortGateway } from '../calls/gateway';
import { classifyFailure } from '../calls/failures';
import { AbortedError, SearcherError } from '../errors';
import { bboxMessage, parseAction, type ParsedTurn } from '../protocol/actions';
import { locationBinsToBox, parseRegionMarks } from '../protocol/location';
import {
  correctiveMessage,
  renderNoResults,
  renderObservation,
  type ObservationItem,
} from '../protocol/observation';
import type { TrajectoryTokens } from '../trajectory/builder';
import type { CropRecord, SearchRecord, TerminationReason, TurnRecord } from '../trajectory/trajectory';
import type { TurnOutput } from '../../ports/policy-backend';
import type { BoundingBox, Evidence, PageImage } from '../../ports/types';
import type { EpisodeConfig } from './config';
import { alignToPixels, mapToSource, shownSize, type ShownImage } from './image-frame';
import type { EpisodeInstance } from './instances';

/** Everything one rollout has done so far. */
export interface RolloutState {
  instance: EpisodeInstance;
  tokens: TrajectoryTokens;
  turns: TurnRecord[];
  evidence: Evidence[];
  retrieved: string[];
  retrievedSet: Set<string>;
  lastImage: ShownImage | null;
  /** Images of the latest observation, for policies that see images. */
  observationImages: PageImage[];
  invalidActions: number;
  done: boolean;
  terminated: TerminationReason | null;
  finalAnswer: string;
  error: { stage: string; message: string; kind?: string } | null;
}

export function finish(state: RolloutState, reason: TerminationReason): void {
  state.done = true;
  state.terminated = reason;
}

/**
 * Runs one policy turn's action (docs/method.md#action-protocol): parses it, searches, crops or
 * ends the episode, and returns the turn's record with the observation to show next. An invalid
 * action is recorded with a corrective observation; a failing search or crop ends the episode in
 * `error` (only this one); an abort propagates.
 */
export async function executeTurn(
  state: RolloutState,
  turn: number,
  text: string,
  finishReason: TurnOutput['finishReason'],
  gateway: PortGateway,
  config: EpisodeConfig,
  signal: AbortSignal | undefined,
): Promise<TurnRecord> {
  let parsed: ParsedTurn = parseAction(text);
  if (parsed.kind === 'valid') {
    const type = parsed.action.type;
    // Answer mode is Search-R1's protocol: search and answer only. Its format check
    // (docs/method.md#search-r1-reward) knows no crops, so a crop turn is refused, not scored -1.
    if (
      (config.mode === 'searcher' && type === 'answer') ||
      (config.mode === 'answer' && (type === 'search_complete' || type === 'bbox'))
    ) {
      const allowed =
        config.mode === 'searcher' ? '<search>, <bbox> or <search_complete>' : '<search> or <answer>';
      parsed = {
        kind: 'invalid',
        think: parsed.think,
        reason: 'action_not_allowed',
        message: `<${type}> is not an action here; use ${allowed}`,
      };
    }
  }
  const record: TurnRecord = {
    index: turn,
    text,
    forced: false,
    think: parsed.think,
    action: parsed.kind === 'valid' ? parsed.action : null,
    invalid: parsed.kind === 'invalid' ? { reason: parsed.reason, message: parsed.message } : null,
    ignoredActions: parsed.kind === 'valid' ? parsed.ignoredActions : [],
    observation: '',
    finishReason,
  };
  const markInvalid = (reason: TurnRecord['invalid'] & object) => {
    record.action = null;
    record.invalid = reason;
    record.observation = correctiveMessage(reason.reason, reason.message, config.mode);
    state.invalidActions++;
  };
  // Cleared before anything can return: only this turn's observation may carry images.
  state.observationImages = [];
  if (parsed.kind === 'invalid') {
    markInvalid({ reason: parsed.reason, message: parsed.message });
    return record;
  }
  const action = parsed.action;
  try {
    switch (action.type) {
      case 'search_complete':
        finish(state, 'complete');
        return record;
      case 'answer':
        state.finalAnswer = action.answer;
        finish(state, 'answer');
        return record;
      case 'search': {
        // Asking for as many more hits as pages already shown lets a repeated query page past topK.
        const hits = await gateway.search(action.query, config.searchTopK + state.retrieved.length, signal);
        const chosenIndex = hits.findIndex((hit) => !state.retrievedSet.has(hit.basename));
        const golden = new Set(state.instance.prompt.goldenBasenames ?? []);
        const search: SearchRecord = {
          query: action.query,
          hitBasenames: hits.map((h) => h.basename),
          chosenBasename: null,
          chosenRank: null,
          goldenRanks: hits.flatMap((h, i) => (golden.has(h.basename) ? [i + 1] : [])),
        };
        record.search = search;
        if (chosenIndex < 0) {
          record.observation = renderNoResults(action.query, hits.length === 0 ? 'empty' : 'exhausted');
          return record;
        }
        const hit = hits[chosenIndex]!;
        search.chosenBasename = hit.basename;
        search.chosenRank = chosenIndex + 1;
        state.retrieved.push(hit.basename);
        state.retrievedSet.add(hit.basename);
        state.evidence.push({
          kind: 'page',
          basename: hit.basename,
          ...(hit.text !== undefined && { text: hit.text }),
          ...(hit.image && { image: hit.image }),
        });
        const item: ObservationItem = {
          kind: 'page',
          basename: hit.basename,
          ...(hit.text !== undefined && { text: hit.text }),
        };
        if (hit.image) {
          const shown = shownSize(hit.image.width, hit.image.height, config.policyImageMaxSide);
          state.lastImage = {
            basename: hit.basename,
            source: hit.image,
            region: [0, 0, hit.image.width, hit.image.height],
            shownWidth: shown.width,
            shownHeight: shown.height,
          };
          state.observationImages = [hit.image];
          item.shownWidth = shown.width;
          item.shownHeight = shown.height;
        } else {
          // The newest page has no image: a bbox now would crop a page the policy no longer sees.
          state.lastImage = null;
        }
        record.observation = renderObservation([item], {
          maxTextChars: config.observationMaxChars,
          ...(config.observationExcerpt === 'query' && { query: action.query }),
        });
        // The regions a crop may name: those the policy was shown (a mark cut off with the text is not).
        const marks = parseRegionMarks(record.observation);
        if (state.lastImage && marks.length > 0) state.lastImage = { ...state.lastImage, marks };
        return record;
      }
      case 'bbox': {
        const shown = state.lastImage;
        if (!gateway.ports.imageOps) {
          markInvalid({
            reason: 'action_not_allowed',
            message: 'cropping is not available in this environment',
          });
          return record;
        }
        if (!shown) {
          markInvalid({ reason: 'bbox_no_image', message: 'there is no image to crop yet; search first' });
          return record;
        }
        // A named region is the box its page marks; location tokens are bins of the shown image's
        // sides: pixels of the shown image from here on.
        let bbox: BoundingBox;
        if ('region' in action) {
          const named = (shown.marks ?? []).filter((m) => m.label === action.region);
          const mark = named[0];
          if (!mark || named.length > 1) {
            markInvalid({
              reason: 'bbox_unknown_region',
              message: unknownRegionMessage(action.region, shown, named.length),
            });
            return record;
          }
          bbox = locationBinsToBox(mark.bins, shown.shownWidth, shown.shownHeight);
        } else
          bbox =
            action.unit === 'location'
              ? locationBinsToBox(action.bbox, shown.shownWidth, shown.shownHeight)
              : action.bbox;
        const [, , x2, y2] = bbox;
        if (x2 > shown.shownWidth || y2 > shown.shownHeight) {
          markInvalid({
            reason: 'bbox_outside_image',
            message: `the bbox must lie inside the image, which is ${shown.shownWidth}x${shown.shownHeight}`,
          });
          return record;
        }
        const mapped = mapToSource(bbox, shown);
        if (mapped[2] - mapped[0] < 1 || mapped[3] - mapped[1] < 1) {
          markInvalid({
            reason: 'bbox_empty_area',
            message: 'the region is smaller than one pixel of the page; choose a larger box',
          });
          return record;
        }
        const region = alignToPixels(mapped, shown.source.width, shown.source.height);
        const crop = await gateway.crop(shown.source, region, {
          minOutputSide: config.cropMinOutputSide,
          ...(signal && { signal }),
        });
        const cropShown = shownSize(crop.width, crop.height, config.policyImageMaxSide);
        state.lastImage = {
          basename: shown.basename,
          source: shown.source,
          region,
          shownWidth: cropShown.width,
          shownHeight: cropShown.height,
        };
        state.evidence.push({ kind: 'crop', basename: shown.basename, image: crop, sourceRegion: region });
        state.observationImages = [crop];
        const cropRecord: CropRecord = {
          bbox,
          basename: shown.basename,
          sourceRegion: region,
          shownWidth: shown.shownWidth,
          shownHeight: shown.shownHeight,
        };
        record.crop = cropRecord;
        record.observation = renderObservation(
          [
            {
              kind: 'crop',
              basename: shown.basename,
              sourceRegion: region,
              shownWidth: cropShown.width,
              shownHeight: cropShown.height,
            },
          ],
          { maxTextChars: config.observationMaxChars },
        );
        return record;
      }
    }
  } catch (error) {
    if (AbortedError.isInstance(error)) throw error;
    const message = SearcherError.isInstance(error) || error instanceof Error ? error.message : String(error);
    state.error = {
      stage: action.type === 'bbox' ? 'crop' : 'search',
      kind: classifyFailure('episode', error).kind,
      message,
    };
    finish(state, 'error');
    return record;
  }
}

/** Why a crop by name found no region: the page's marks, none on a crop, or one name marked twice. */
function unknownRegionMessage(name: string, shown: ShownImage, matches: number): string {
  const [x1, y1, x2, y2] = shown.region;
  const isCrop = x1 !== 0 || y1 !== 0 || x2 !== shown.source.width || y2 !== shown.source.height;
  if (matches > 1)
    return `the image you were shown marks ${matches} regions named "${name}", so the name does not say which; write the box instead: ${bboxMessage('format')}`;
  if (isCrop)
    return `a crop marks no regions, so "${name}" names none; write a box in the crop's pixels, or search again`;
  const names = [...new Set((shown.marks ?? []).map((m) => m.label))];
  if (names.length === 0)
    return `the image you were shown marks no regions, so "${name}" names none; ${bboxMessage('format')}`;
  return `the image you were shown marks no region named "${name}"; it marks ${names.join(', ')}`;
}

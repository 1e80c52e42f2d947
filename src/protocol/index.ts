// searcher-rl/protocol: the Searcher's turn protocol with the SDK's own rules, for an agent
// developer who decodes with their own model server: parse a turn (`parseAction`), render an
// action (`renderAction`), render observations, the tags, the protocol's tokenizer, location
// tokens for boxes and region marks. The same functions the environment and the trainer use.
export {
  parseAction,
  renderAction,
  parseBoundingBox,
  bboxMessage,
  type Action,
  type ParsedTurn,
  type ValidTurn,
  type InvalidTurn,
  type InvalidActionReason,
} from '../core/protocol/actions';
export {
  renderObservation,
  renderNoResults,
  correctiveMessage,
  neutraliseTags,
  type ObservationItem,
} from '../core/protocol/observation';
export {
  ACTION_TAGS,
  PROTOCOL_TAGS,
  PROTOCOL_TAG_STRINGS,
  TURN_STOP_TAGS,
  type ActionTag,
  type ProtocolTag,
} from '../core/protocol/tags';
export { createProtocolTokenizer } from '../core/protocol/tokenizer';
export {
  LOCATION_BINS,
  LOCATION_SLOTS,
  LOCATION_TOKENS,
  locationToken,
  boxToLocationBins,
  locationText,
  locationBinsText,
  locationBinsToBox,
  parseLocationBins,
  parseRegionMarks,
  regionMarkText,
  normaliseRegionName,
  type RegionMark,
} from '../core/protocol/location';

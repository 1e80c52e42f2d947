export {
  generateSlideCorpus,
  DEFAULT_SLIDE_CORPUS_SETTINGS,
  SLIDE_WIDTH,
  SLIDE_HEIGHT,
  SMALL_FONT_PX,
  READABLE_FONT_PX,
  type SlideCorpus,
  type SlideCorpusSettings,
  type Slide,
  type SlideFact,
  type Deck,
  type CorpusQuestion,
} from './corpus';
export { createSlideReader, type SlideReader } from './reader';
export { buildSlideEnvironment, renderSlide, slideSvg, type SlideEnvironment } from './build';
export { slideText } from './slide-text';

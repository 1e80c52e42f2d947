import type { CallOptions, SetupCheck } from './common';
import type { BoundingBox, PageImage } from './types';

/** Options of one crop. */
export interface CropOptions extends CallOptions {
  /** Enlarge the crop so that its longer side is at least this many pixels (small print becomes legible). */
  minOutputSide?: number;
}

/** Image operations the environment needs. `bbox` is in the source image's pixels, already validated. */
export interface ImageOps extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /** The pixels of `bbox` as a new image, enlarged to `minOutputSide` when asked. */
  doCrop(image: PageImage, bbox: BoundingBox, options?: CropOptions): Promise<PageImage>;
}

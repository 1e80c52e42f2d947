import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading sharp.
/**
 * The sharp image ops' settings as a zod schema: format, compression, kernel, output cap and
 * decoded-page cache.
 */
export const sharpImageOpsSettingsSchema = z
  .object({
    /** Encoding of the crops. */
    format: z.enum(['png', 'jpeg', 'webp']).default('png'),
    /**
     * zlib level of PNG crops (lossless at every level). 2: on 768x432 slide crops, 32 KB in 1.8 ms
     * of CPU against sharp's default 6 at 30 KB in 2.9 ms (zlib-ng; `npm run bench:serve`).
     */
    compressionLevel: z.number().int().min(0).max(9).default(2),
    /** Resampling kernel for the enlargement (lanczos3 keeps small print sharp). */
    kernel: z.enum(['nearest', 'linear', 'cubic', 'mitchell', 'lanczos2', 'lanczos3']).default('lanczos3'),
    /** Largest output side; an enlargement never goes past it. */
    maxOutputSide: positiveInt().default(4096),
    /**
     * Decoded page pixels kept for the next crop of the same page (bytes; 0: decode every time).
     * 64 MiB holds about 70 pages of 640x360 or 5 of 2480x3508 (A4 at 300 dpi).
     */
    decodedCacheBytes: z
      .number()
      .int()
      .min(0)
      .default(64 * 1024 * 1024),
  })
  .strict();

import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading sharp.
export const sharpImageOpsSettingsSchema = z
  .object({
    /** Encoding of the crops. */
    format: z.enum(['png', 'jpeg', 'webp']).default('png'),
    /** Resampling kernel for the enlargement (lanczos3 keeps small print sharp). */
    kernel: z.enum(['nearest', 'linear', 'cubic', 'mitchell', 'lanczos2', 'lanczos3']).default('lanczos3'),
    /** Largest output side; an enlargement never goes past it. */
    maxOutputSide: positiveInt().default(4096),
  })
  .strict();

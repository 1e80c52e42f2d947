import { z } from 'zod';

export const tensorBoardTrackerSettingsSchema = z
  .object({
    /** The folder of the event files (`tensorboard --logdir` it); a resumed run adds a file beside the earlier ones. */
    logDir: z.string().min(1),
  })
  .strict();

export type TensorBoardTrackerSettings = z.input<typeof tensorBoardTrackerSettingsSchema>;

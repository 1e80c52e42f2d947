import { z } from 'zod';

/** The TensorBoard tracker's settings as a zod schema: the folder of the event files. */
export const tensorBoardTrackerSettingsSchema = z
  .object({
    /** The folder of the event files (`tensorboard --logdir` it); a resumed run adds a file beside the earlier ones. */
    logDir: z.string().min(1),
  })
  .strict();

/** Settings of `createTensorBoardTracker` (`tensorBoardTrackerSettingsSchema`). */
export type TensorBoardTrackerSettings = z.input<typeof tensorBoardTrackerSettingsSchema>;

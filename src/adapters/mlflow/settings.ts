import { z } from 'zod';

// Apart from the adapter so that a run's configuration can name it without loading it.
/**
 * The MLflow tracker's settings as a zod schema: the tracking server, the experiment and the run's
 * tags.
 */
export const mlflowTrackerSettingsSchema = z
  .object({
    /** The tracking server, e.g. http://127.0.0.1:5000 (`mlflow server`). Default: MLFLOW_TRACKING_URI. */
    trackingUri: z.string().url().optional(),
    /** The experiment's name (made when missing). Default: MLFLOW_EXPERIMENT_NAME, else MLflow's `Default`. */
    experiment: z.string().min(1).optional(),
    /** Sent as `Authorization: Bearer …`. Default: MLFLOW_TRACKING_TOKEN (else basic auth from MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD). */
    token: z.string().min(1).optional(),
    /** Tags of the MLflow run. */
    tags: z.record(z.string(), z.string()).optional(),
  })
  .strict();

/** Settings of `createMlflowTracker` (`mlflowTrackerSettingsSchema`). */
export type MlflowTrackerSettings = z.input<typeof mlflowTrackerSettingsSchema>;

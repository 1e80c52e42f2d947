import { z } from 'zod';
import { mlflowTrackerSettingsSchema } from './adapters/mlflow/settings';
import { tensorBoardTrackerSettingsSchema } from './adapters/tensorboard/settings';
import { TRACKER_CALL_POLICY } from './core/calls/call-policy';

/** How a tracker is called (the call rule's timeout and retries; docs/method.md#provider-calls). */
const trackerCalls = {
  timeoutMs: z.number().positive().default(TRACKER_CALL_POLICY.timeoutMs!).describe('Per attempt.'),
  maxRetries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .default(TRACKER_CALL_POLICY.maxRetries)
    .describe('Retries of 408/409/429/5xx, connection errors and timeouts, honouring Retry-After.'),
};

const trackerObjectSchema = z.discriminatedUnion('type', [
  z
    .object({ type: z.literal('jsonl') })
    .strict()
    .describe("The run folder's own records (each phase's metric.jsonl, the eval-*.json): always written."),
  tensorBoardTrackerSettingsSchema
    .partial()
    .extend({ type: z.literal('tensorboard'), ...trackerCalls })
    .strict()
    .describe("TensorBoard event files, by default in the run folder's `tensorboard/`."),
  mlflowTrackerSettingsSchema
    // A token in a configuration would be stored with it (config.json): MLFLOW_TRACKING_TOKEN only.
    .omit({ token: true })
    .extend({ type: z.literal('mlflow'), ...trackerCalls })
    .strict()
    .describe(
      'An MLflow tracking server (trackingUri, else MLFLOW_TRACKING_URI; token from MLFLOW_TRACKING_TOKEN).',
    ),
]);

export const TRACKER_TYPES = ['jsonl', 'tensorboard', 'mlflow'] as const;

/**
 * Where a run's figures go (TRL's `report_to`, verl's `trainer.logger`): a name (`tensorboard`)
 * or an object with the tracker's settings (`{type: mlflow, trackingUri: …, experiment: …}`).
 */
export const trackerConfigSchema = z
  .union([z.enum(TRACKER_TYPES), trackerObjectSchema])
  .transform((value) => (typeof value === 'string' ? trackerObjectSchema.parse({ type: value }) : value));

export type TrackerConfig = z.output<typeof trackerConfigSchema>;
export type TrackerConfigInput = z.input<typeof trackerConfigSchema>;

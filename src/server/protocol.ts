import { z } from 'zod';

/**
 * The OpenEnv WebSocket protocol as meta-pytorch/OpenEnv defines it
 * (src/openenv/core/env_server/types.py, http_server.py `/ws`): every frame is `{type, data}`.
 * Client: `reset` (data: reset parameters, extra keys ignored), `step` (data: the action),
 * `state`, `close` (no data), `mcp` (a JSON-RPC request; not served here). Server: `observation`
 * (data: `{observation, reward, done}` as `serialize_observation` writes it), `state`, `error`
 * (data: `{message, code, ...}`), or `mcp` (a JSON-RPC error).
 */
export const WS_ERROR_CODES = [
  'INVALID_JSON',
  'UNKNOWN_TYPE',
  'VALIDATION_ERROR',
  'EXECUTION_ERROR',
  'CAPACITY_REACHED',
  'FACTORY_ERROR',
  'SESSION_ERROR',
] as const;
/** The `code` of an error frame (`WS_ERROR_CODES`). */
export type WsErrorCode = (typeof WS_ERROR_CODES)[number];

/** An inline task: a question with what the reward needs (snake_case, as Python clients write it). */
export const inlineTaskSchema = z
  .object({
    uid: z.string().min(1).optional(),
    question: z.string().min(1),
    reference: z.string().optional(),
    /** Every answer the exact-match check accepts (Search-R1's golden_answers). */
    answers: z.array(z.string().min(1)).min(1).optional(),
    golden_basenames: z.array(z.string()).optional(),
  })
  .strict();

/** `ResetRequest`: `seed` (>= 0) and `episode_id` (at most 255 characters), extra keys allowed; ours adds `task`. */
export const resetDataSchema = z
  .object({
    seed: z.number().int().min(0).nullable().optional(),
    episode_id: z.string().max(255).nullable().optional(),
    /** A task id from `GET /tasks`, or an inline task. Without it the seed picks one (`seed mod tasks`). */
    task: z
      .union([z.string().min(1), inlineTaskSchema])
      .nullable()
      .optional(),
  })
  .loose();

/** The action: the raw assistant turn, exactly as the policy generated it (an `Action` forbids extra keys). */
export const stepActionSchema = z
  .object({
    text: z.string(),
    /** Why generation stopped, recorded on the turn (default `stop`). */
    finish_reason: z.enum(['stop', 'length', 'eos']).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/**
 * What a client may send over `/ws`: `reset`, `step`, `state`, `close` (and OpenEnv's `mcp`,
 * answered with an error).
 */
export const clientMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('reset'), data: resetDataSchema.default({}) }).strict(),
  z.object({ type: z.literal('step'), data: stepActionSchema }).strict(),
  z.object({ type: z.literal('state') }).strict(),
  z.object({ type: z.literal('close') }).strict(),
]);

const rewardCauseSchema = z.object({
  stage: z.enum(['episode', 'generator', 'judge']),
  kind: z.string(),
  message: z.string(),
});

/** What the policy sees: the observation text and its images as data URIs; `metadata` carries the episode's bookkeeping. */
export const observationSchema = z
  .object({
    text: z.string(),
    images: z.array(z.string().startsWith('data:')),
    metadata: z
      .object({
        episode_id: z.string(),
        task_id: z.string(),
        step: z.number().int().min(0),
        /** At done: how the episode ended (complete, answer, budget, context, error). */
        terminated: z.string().optional(),
        /** At done: `ok`, or `missing` when the reward could not be computed (mask the sample, do not train on 0). */
        reward_status: z.enum(['ok', 'missing']).optional(),
        reward_cause: rewardCauseSchema.optional(),
        reward_components: z.record(z.string(), z.unknown()).optional(),
        final_answer: z.string().optional(),
        invalid_action: z.string().optional(),
      })
      .strict(),
  })
  .strict();
/**
 * An observation as the server sends it: the text, images as data URIs, and the reward at the end.
 */
export type ObservationPayload = z.infer<typeof observationSchema>;

/** The `state` reply: the episode id, the step count and what the episode holds so far. */
export const stateSchema = z
  .object({
    episode_id: z.string().nullable(),
    step_count: z.number().int().min(0),
    task_id: z.string().nullable(),
    done: z.boolean(),
    terminated: z.string().nullable(),
    invalid_actions: z.number().int().min(0),
    retrieved: z.array(z.string()),
  })
  .loose();
/** The `state` reply (`stateSchema`). */
export type StatePayload = z.infer<typeof stateSchema>;

/** What the server sends: an observation, a state, or an error frame with its code. */
export const serverMessageSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('observation'),
      data: z
        .object({ observation: observationSchema, reward: z.number().nullable(), done: z.boolean() })
        .strict(),
    })
    .strict(),
  z.object({ type: z.literal('state'), data: stateSchema }).strict(),
  z
    .object({
      type: z.literal('error'),
      data: z.object({ message: z.string(), code: z.enum(WS_ERROR_CODES) }).loose(),
    })
    .strict(),
  z
    .object({
      type: z.literal('mcp'),
      data: z
        .object({
          jsonrpc: z.literal('2.0'),
          id: z.union([z.string(), z.number(), z.null()]),
          error: z.object({ code: z.number().int(), message: z.string() }).strict(),
        })
        .strict(),
    })
    .strict(),
]);
/** One message the server sends (`serverMessageSchema`). */
export type ServerMessage = z.infer<typeof serverMessageSchema>;

export function errorFrame(
  code: WsErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): ServerMessage {
  return { type: 'error', data: { message, code, ...extra } };
}

/** At most this much of what a client sent is quoted back in an error (a type, a method name). */
export function quoted(value: unknown, max = 80): string {
  const text = String(value ?? '');
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** JSON-RPC 2.0's codes for a request that is not one, and for a method that is not served. */
const JSON_RPC_INVALID_REQUEST = -32600;
const JSON_RPC_METHOD_NOT_FOUND = -32601;

/**
 * The answer to an `mcp` frame (OpenEnv's `WSMCPMessage`, a JSON-RPC request in `data`): this
 * environment has no MCP tools, so a JSON-RPC error in a `{"type":"mcp"}` frame, as OpenEnv's server
 * answers for an environment without MCP, and the session goes on.
 */
export function mcpNotServed(data: unknown): ServerMessage {
  const request =
    data !== null && typeof data === 'object' && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : null;
  const id = typeof request?.id === 'string' || typeof request?.id === 'number' ? request.id : null;
  const error =
    typeof request?.method === 'string'
      ? {
          code: JSON_RPC_METHOD_NOT_FOUND,
          message: `Method not found: ${quoted(request.method)}: this environment has no MCP tools; its actions are step frames ({"type":"step","data":{"text": <the assistant turn>}}, docs/scale-out.md)`,
        }
      : {
          code: JSON_RPC_INVALID_REQUEST,
          message: 'Invalid Request: data must be a JSON-RPC request {jsonrpc, method, params, id}',
        };
  return { type: 'mcp', data: { jsonrpc: '2.0', id, error } };
}

/** `GET /schema` (`SchemaResponse`): the JSON schemas of the action, the observation and the state. */
export function schemaResponse(): { action: unknown; observation: unknown; state: unknown } {
  return {
    action: z.toJSONSchema(stepActionSchema),
    observation: z.toJSONSchema(observationSchema),
    state: z.toJSONSchema(stateSchema),
  };
}

/** A data URI for an image as the policy is shown it. */
export function dataUri(image: { mimeType: string; bytes: Uint8Array }): string {
  return `data:${image.mimeType};base64,${Buffer.from(image.bytes).toString('base64')}`;
}

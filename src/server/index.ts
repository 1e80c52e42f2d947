// searcher-rl/server: the environment and its rewards served to distributed trainers (OpenEnv
// WebSocket protocol; docs/scale-out.md). `searcher-rl serve-env` runs `serveEnv`.
export { serveEnv, type ServeEnvOptions } from './serve';
export { createEnvServer, type EnvServer, type EnvServerOptions } from './env-server';
export { buildServedEnvironment, type ServedEnvironmentSettings } from './served-environment';
export type { ServedEnvironment, ResetParameters, StepReply } from './environment';
export {
  WS_ERROR_CODES,
  clientMessageSchema,
  serverMessageSchema,
  type WsErrorCode,
  type ServerMessage,
  type ObservationPayload,
  type StatePayload,
} from './protocol';

// The execution providers ONNX Runtime sessions are made on (session.ts), named by the ONNX and
// Llama policies' settings: no ONNX Runtime import, so that a configuration names them without loading it.

/** Execution providers the ONNX engines know; `cpu` ships with onnxruntime-node, `cuda` is installed apart. */
export const ONNX_EXECUTION_PROVIDERS = ['cpu', 'cuda'] as const;
/** An execution provider an ONNX Runtime session can run on (`ONNX_EXECUTION_PROVIDERS`). */
export type OnnxExecutionProvider = (typeof ONNX_EXECUTION_PROVIDERS)[number];

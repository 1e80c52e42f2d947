import { ONNX_FLOAT, ONNX_INT64, type OnnxAttribute, type OnnxNode, type OnnxTensor } from './proto';

/**
 * Collects nodes and constants, naming every intermediate value: for the transformer's forward
 * (transformer-graph.ts), its training graph (training-graph.ts) and the Llama family's graphs
 * (through engines/llama/autodiff.ts).
 */
export class GraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  private counter = 0;

  op(
    opType: string,
    inputs: readonly string[],
    attributes?: Record<string, OnnxAttribute>,
    output?: string,
    domain?: string,
  ): string {
    const name = output ?? `${opType.toLowerCase()}_${this.counter++}`;
    this.nodes.push({ opType, inputs, outputs: [name], attributes, ...(domain && { domain }) });
    return name;
  }

  /** An op with several outputs. */
  ops(
    opType: string,
    inputs: readonly string[],
    outputCount: number,
    attributes?: Record<string, OnnxAttribute>,
  ): string[] {
    const outputs = Array.from({ length: outputCount }, () => `${opType.toLowerCase()}_${this.counter++}`);
    this.nodes.push({ opType, inputs, outputs, attributes });
    return outputs;
  }

  floatScalar(name: string, value: number): string {
    this.initializers.push({ name, type: ONNX_FLOAT, dims: [], values: [value] });
    return name;
  }

  floats(name: string, values: readonly number[]): string {
    this.initializers.push({ name, type: ONNX_FLOAT, dims: [values.length], values });
    return name;
  }

  ints(name: string, values: readonly number[]): string {
    this.initializers.push({ name, type: ONNX_INT64, dims: [values.length], values });
    return name;
  }
}

import { decodeSafetensors } from '../../../provider-utils/safetensors';

/** Checkpoint blob bytes with float32 element `index` of tensor `tensor` (a safetensors file) set to `value`. */
export function withTensorValue(bytes: Uint8Array, tensor: string, index: number, value: number): Uint8Array {
  const copy = bytes.slice();
  const found = decodeSafetensors(copy, { argument: 'test' }).tensors.get(tensor);
  if (!found) throw new Error(`no tensor '${tensor}'`);
  new DataView(found.bytes.buffer, found.bytes.byteOffset, found.bytes.byteLength).setFloat32(index * 4, value, true);
  return copy;
}

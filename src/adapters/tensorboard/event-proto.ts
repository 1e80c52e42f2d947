// A small protobuf writer for the few messages of a TensorBoard event file
// (tensorboard/compat/proto: event.proto, summary.proto, tensor.proto), fields in field-number
// order as the reference serialiser writes them, so the bytes equal TensorBoard's own writer's.

class ProtoWriter {
  private readonly parts: number[] = [];

  private varint(value: number | bigint): void {
    let v = BigInt(value);
    if (v < 0n) v += 1n << 64n;
    while (v >= 0x80n) {
      this.parts.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.parts.push(Number(v));
  }

  private key(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  int64(field: number, value: number): this {
    if (value !== 0) {
      this.key(field, 0);
      this.varint(value);
    }
    return this;
  }

  enum(field: number, value: number): this {
    return this.int64(field, value);
  }

  double(field: number, value: number): this {
    if (value !== 0 || Object.is(value, -0)) {
      this.key(field, 1);
      const bytes = new Uint8Array(8);
      new DataView(bytes.buffer).setFloat64(0, value, true);
      this.parts.push(...bytes);
    }
    return this;
  }

  /** A float field written even when 0 (a scalar summary's value is in a oneof: presence counts). */
  float(field: number, value: number): this {
    this.key(field, 5);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.parts.push(...bytes);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.key(field, 2);
    this.varint(value.length);
    this.parts.push(...value);
    return this;
  }

  string(field: number, value: string): this {
    return value === '' ? this : this.bytes(field, new TextEncoder().encode(value));
  }

  /** A sub-message, written even when empty (a set message field is present). */
  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

/** tensorflow.DataType.DT_STRING */
const DT_STRING = 7;

/** A scalar (`simple_value`) or a text summary (a string tensor the text plugin draws as Markdown). */
export type SummaryValue = { tag: string; scalar: number } | { tag: string; text: string };

function summaryValue(value: SummaryValue): ProtoWriter {
  // Summary.Value: tag = 1, simple_value = 2, tensor = 8, metadata = 9.
  const out = new ProtoWriter().string(1, value.tag);
  if ('scalar' in value) return out.float(2, value.scalar);
  const tensor = new ProtoWriter()
    .enum(1, DT_STRING)
    .message(2, new ProtoWriter())
    .bytes(8, new TextEncoder().encode(value.text));
  const metadata = new ProtoWriter().message(1, new ProtoWriter().string(1, 'text'));
  return out.message(8, tensor).message(9, metadata);
}

/** SessionLog.SessionStatus.START */
const SESSION_START = 1;

/**
 * An Event: wall_time = 1 (seconds), step = 2, file_version = 3, summary = 5, session_log = 7.
 * A `start` session log says the program restarted at `step`: readers drop what they hold from
 * that step on (EventAccumulator's purge of orphaned data).
 */
export function encodeEvent(event: {
  wallTime: number;
  step?: number;
  fileVersion?: string;
  values?: readonly SummaryValue[];
  sessionLog?: 'start';
}): Uint8Array {
  const out = new ProtoWriter()
    .double(1, event.wallTime)
    .int64(2, event.step ?? 0)
    .string(3, event.fileVersion ?? '');
  if (event.values) {
    const summary = new ProtoWriter();
    for (const value of event.values) summary.message(1, summaryValue(value));
    out.message(5, summary);
  }
  if (event.sessionLog === 'start') out.message(7, new ProtoWriter().enum(1, SESSION_START));
  return out.finish();
}

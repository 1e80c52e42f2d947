/**
 * A small WebAssembly assembler for the project's kernels (the image enlargement's,
 * `adapters/image/enlarge-kernels.ts`; AdamW's, `adapters/engines/adamw-kernel.ts`): function bodies are
 * written in the WebAssembly text format's flat instruction syntax (`local.get 0`, `v128.load
 * offset=16 align=16`, `;;` comments; locals by index) and encoded to the binary format
 * (https://webassembly.github.io/spec/core/binary/). Only the instructions the kernels use are
 * known; an unknown one is an error at assembly, not a wrong module.
 */

/** Opcodes: a number, or [0xfd, n] for SIMD (the prefix byte, then n as LEB128). */
const OPCODES: Record<string, number | [number, number]> = {
  block: 0x02,
  loop: 0x03,
  br: 0x0c,
  br_if: 0x0d,
  end: 0x0b,
  'local.get': 0x20,
  'local.set': 0x21,
  'local.tee': 0x22,
  'i32.load': 0x28,
  'i32.store': 0x36,
  'i32.store8': 0x3a,
  'i32.const': 0x41,
  'i32.eqz': 0x45,
  'i32.ne': 0x47,
  'i32.lt_u': 0x49,
  'i32.ge_u': 0x4f,
  'i32.add': 0x6a,
  'i32.sub': 0x6b,
  'i32.mul': 0x6c,
  'i32.shl': 0x74,
  'v128.load': [0xfd, 0x00],
  'v128.store': [0xfd, 0x0b],
  'v128.const': [0xfd, 0x0c],
  'i8x16.shuffle': [0xfd, 0x0d],
  'i8x16.swizzle': [0xfd, 0x0e],
  'i8x16.narrow_i16x8_u': [0xfd, 0x66],
  'i16x8.narrow_i32x4_s': [0xfd, 0x85],
  'i32x4.splat': [0xfd, 0x11],
  'i32x4.shr_s': [0xfd, 0xac],
  'i32x4.add': [0xfd, 0xae],
  'i32x4.dot_i16x8_s': [0xfd, 0xba],
  'v128.and': [0xfd, 0x4e],
  'i8x16.sub': [0xfd, 0x71],
  'i32x4.eq': [0xfd, 0x37],
  'i32x4.all_true': [0xfd, 0xa3],
  'f32x4.splat': [0xfd, 0x13],
  'f32x4.sqrt': [0xfd, 0xe3],
  'f32x4.add': [0xfd, 0xe4],
  'f32x4.sub': [0xfd, 0xe5],
  'f32x4.mul': [0xfd, 0xe6],
  'f32x4.div': [0xfd, 0xe7],
};

/** The immediates that follow each instruction that has any. */
const IMMEDIATES: Record<string, 'blocktype' | 'index' | 'i32' | 'memarg' | 'bytes16'> = {
  'v128.const': 'bytes16', // written as 16 byte values (the text format's `v128.const i8x16 ...`)
  'i8x16.shuffle': 'bytes16', // 16 lane indices
  block: 'blocktype',
  loop: 'blocktype',
  br: 'index',
  br_if: 'index',
  'local.get': 'index',
  'local.set': 'index',
  'local.tee': 'index',
  'i32.const': 'i32',
  'i32.load': 'memarg',
  'i32.store': 'memarg',
  'i32.store8': 'memarg',
  'v128.load': 'memarg',
  'v128.store': 'memarg',
};

export type ValueType = 'i32' | 'f32' | 'v128';
const VALUE_TYPES: Record<ValueType, number> = { i32: 0x7f, f32: 0x7d, v128: 0x7b };

export interface WasmFunction {
  name: string;
  params: ValueType[];
  /** What it returns (none by default). */
  results?: ValueType[];
  /** Locals after the parameters, in order. */
  locals: ValueType[];
  /** Instructions in the text format, e.g. `local.get 0 v128.load offset=16 align=16 ;; why`. */
  body: string;
}

const unsigned = (value: number): number[] => {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
};

const signed = (value: number): number[] => {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
};

const vector = (items: number[][]): number[] => [...unsigned(items.length), ...items.flat()];
const section = (id: number, contents: number[]): number[] => [id, ...unsigned(contents.length), ...contents];
const name = (text: string): number[] => {
  const bytes = [...new TextEncoder().encode(text)];
  return [...unsigned(bytes.length), ...bytes];
};

function encodeBody(fn: WasmFunction): number[] {
  const out: number[] = [];
  const tokens = fn.body
    .split('\n')
    .map((line) => {
      const comment = line.indexOf(';;');
      return comment < 0 ? line : line.slice(0, comment);
    })
    .join(' ')
    .split(/\s+/)
    .filter(Boolean);
  const number = (i: number) => {
    const value = Number(tokens[i]);
    if (!Number.isInteger(value))
      throw new Error(`${fn.name}: '${tokens[i - 1]}' needs a number, got '${tokens[i]}'`);
    return value;
  };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const opcode = OPCODES[token];
    if (opcode === undefined) throw new Error(`${fn.name}: unknown instruction '${token}'`);
    if (Array.isArray(opcode)) out.push(opcode[0], ...unsigned(opcode[1]));
    else out.push(opcode);
    const immediate = IMMEDIATES[token];
    if (immediate === 'blocktype') out.push(0x40);
    else if (immediate === 'index') out.push(...unsigned(number(++i)));
    else if (immediate === 'i32') out.push(...signed(number(++i)));
    else if (immediate === 'bytes16')
      for (let k = 0; k < 16; k++) {
        const byte = number(++i);
        if (byte < 0 || byte > 255) throw new Error(`${fn.name}: '${token}' takes bytes, got ${byte}`);
        out.push(byte);
      }
    else if (immediate === 'memarg') {
      // offset=N and align=N (bytes) in either order; align defaults to 1 byte (a hint only).
      let offset = 0;
      let alignBytes = 1;
      for (
        let match = /^(offset|align)=(\d+)$/.exec(tokens[i + 1] ?? '');
        match;
        match = /^(offset|align)=(\d+)$/.exec(tokens[i + 1] ?? '')
      ) {
        i++;
        if (match[1] === 'offset') offset = Number(match[2]);
        else alignBytes = Number(match[2]);
      }
      out.push(...unsigned(Math.log2(alignBytes)), ...unsigned(offset));
    }
  }
  out.push(0x0b);
  return out;
}

/** A module of `functions` over one exported memory (`memory`, `pages` x 64 KiB to start). */
export function assembleModule(functions: WasmFunction[], pages: number): Uint8Array {
  const types = functions.map((fn) => [
    0x60,
    ...vector(fn.params.map((t) => [VALUE_TYPES[t]])),
    ...vector((fn.results ?? []).map((t) => [VALUE_TYPES[t]])),
  ]);
  const code = functions.map((fn) => {
    const locals = vector(fn.locals.map((t) => [1, VALUE_TYPES[t]]));
    const body = [...locals, ...encodeBody(fn)];
    return [...unsigned(body.length), ...body];
  });
  const exports = [
    [...name('memory'), 0x02, 0x00],
    ...functions.map((fn, i) => [...name(fn.name), 0x00, ...unsigned(i)]),
  ];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vector(types)),
    ...section(3, vector(functions.map((_, i) => unsigned(i)))),
    ...section(5, vector([[0x00, ...unsigned(pages)]])),
    ...section(7, vector(exports)),
    ...section(10, vector(code)),
  ]);
}

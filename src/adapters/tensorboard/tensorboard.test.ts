import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32c, maskedCrc32c, tfRecord } from './crc32c';
import { encodeEvent } from './event-proto';
import { createTensorBoardTracker } from './tracker';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** The records of an event file, each checked against its two masked CRCs. */
function readRecords(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    const length = Number(view.getBigUint64(at, true));
    expect(view.getUint32(at + 8, true)).toBe(maskedCrc32c(bytes.subarray(at, at + 8)));
    const data = bytes.subarray(at + 12, at + 12 + length);
    expect(view.getUint32(at + 12 + length, true)).toBe(maskedCrc32c(data));
    records.push(data);
    at += 16 + length;
  }
  return records;
}

describe('CRC-32C and TFRecord framing', () => {
  it('gives the check values of RFC 3720 (B.4) and of the CRC catalogue', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('masks as TensorFlow does: rotate right by 15, add 0xa282ead8', () => {
    const crc = crc32c(new TextEncoder().encode('123456789'));
    expect(maskedCrc32c(new TextEncoder().encode('123456789'))).toBe(
      ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0,
    );
    expect(hex(tfRecord(new Uint8Array(0)))).toBe(
      `0000000000000000${hex(u32(maskedCrc32c(new Uint8Array(8))))}${hex(u32(maskedCrc32c(new Uint8Array(0))))}`,
    );
  });

  // Made by tensorboard 2.21.0's own writer (tensorboard.summary.writer.record_writer.RecordWriter
  // over event_pb2.Event.SerializeToString()): Event(wall_time=1700000000.5,
  // file_version='brain.Event:2'); Event(wall_time=1700000001.25, step=3, summary: phase1/loss
  // 0.125, phase1/kl -2.5); Event(wall_time=1700000002.0, step=300, summary: tag 'config', a
  // DT_STRING scalar tensor '| a | 1 |', metadata plugin_name 'text').
  const TENSORBOARD_BYTES =
    '1800000000000000a37f4b220900002040fc54d9411a0d627261696e2e4576656e743a322b35311033000000000000000ca720560900005040fc54d94110032a260a120a0b7068617365312f6c6f7373150000003e0a100a097068617365312f6b6c15000020c07491c61333000000000000000ca720560900008040fc54d94110ac022a250a230a06636f6e666967420f0807120042097c2061207c2031207c4a080a060a0474657874076f2744';

  it("writes the same bytes as TensorBoard's own writer", () => {
    const bytes = [
      encodeEvent({ wallTime: 1700000000.5, fileVersion: 'brain.Event:2' }),
      encodeEvent({
        wallTime: 1700000001.25,
        step: 3,
        values: [
          { tag: 'phase1/loss', scalar: 0.125 },
          { tag: 'phase1/kl', scalar: -2.5 },
        ],
      }),
      encodeEvent({ wallTime: 1700000002, step: 300, values: [{ tag: 'config', text: '| a | 1 |' }] }),
    ]
      .map((e) => hex(tfRecord(e)))
      .join('');
    expect(bytes).toBe(TENSORBOARD_BYTES);
  });

  it('encodes large steps as varints and a zero value as present (bytes from event_pb2)', () => {
    // event_pb2.Event(wall_time=1, step=2**40 + 5, summary: x = 0.0).SerializeToString()
    expect(hex(encodeEvent({ wallTime: 1, step: 2 ** 40 + 5, values: [{ tag: 'x', scalar: 0 }] }))).toBe(
      '09000000000000f03f108580808080202a0a0a080a01781500000000',
    );
  });
});

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value, true);
  return out;
}

describe('createTensorBoardTracker', () => {
  it('writes an event file of framed events: file version, the config as text, the scalars of each step', async () => {
    const logDir = await mkdtemp(join(tmpdir(), 'tb-'));
    dirs.push(logDir);
    const tracker = createTensorBoardTracker({ logDir });
    expect(await tracker.doStart({ runName: 'r', resume: null, continuesAt: null })).toEqual({ logDir });
    await tracker.doLogParams({ 'policy.layers': 2, 'phases.0.name': 'phase1' });
    await tracker.doLogScalars([
      { step: 1, time: 1_700_000_000_000, values: { 'phase1/loss': 0.5 } },
      { step: 2, time: 1_700_000_001_000, values: { 'phase1/loss': 0.25, 'phase1/kl': 0.01 } },
    ]);
    await tracker.doFinish('finished');
    const files = await readdir(logDir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^events\.out\.tfevents\.\d{10}\..+\.\d+\.0$/);
    const records = readRecords(await readFile(join(logDir, files[0]!)));
    expect(records).toHaveLength(4);
    expect(Buffer.from(records[0]!).toString('latin1')).toContain('brain.Event:2');
    expect(Buffer.from(records[1]!).toString('utf8')).toContain('| policy.layers | 2 |');
    expect(hex(records[3]!)).toBe(
      hex(
        encodeEvent({
          wallTime: 1_700_000_001,
          step: 2,
          values: [
            { tag: 'phase1/loss', scalar: 0.25 },
            { tag: 'phase1/kl', scalar: 0.01 },
          ],
        }),
      ),
    );
    await expect(tracker.doLogScalars([{ step: 3, time: 0, values: {} }])).rejects.toThrow(/not started/);
  });

  it('continues a resumed run in a new file that sorts after the earlier ones and starts with a restart at the step continued', async () => {
    const logDir = await mkdtemp(join(tmpdir(), 'tb-'));
    dirs.push(logDir);
    const first = createTensorBoardTracker({ logDir });
    const resume = await first.doStart({ runName: 'r', resume: null, continuesAt: 1 });
    await first.doLogScalars([{ step: 3, time: Date.now(), values: { a: 1 } }]);
    await first.doFinish('killed');
    // A new folder gets no restart event: nothing to drop.
    expect(readRecords(await readFile(first.file!))).toHaveLength(2);
    const second = createTensorBoardTracker({ logDir });
    await second.doStart({ runName: 'r', resume, continuesAt: 3 });
    await second.doLogScalars([{ step: 3, time: Date.now(), values: { a: 2 } }]);
    await second.doFinish('finished');
    const files = (await readdir(logDir)).sort();
    expect(files).toHaveLength(2);
    expect(join(logDir, files[1]!)).toBe(second.file);
    const records = readRecords(await readFile(second.file!));
    expect(records).toHaveLength(3);
    // event_pb2.Event(wall_time=…, step=3, session_log=SessionLog(status=START)), after the wall time.
    expect(hex(records[1]!).slice(18)).toBe('10033a020801');
  });
});

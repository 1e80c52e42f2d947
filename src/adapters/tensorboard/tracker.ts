import { mkdir, open, readdir, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { InvalidArgumentError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type {
  Tracker,
  TrackerParamValue,
  TrackerResume,
  TrackerRunStatus,
  TrackerScalars,
  TrackerStart,
} from '../../ports/tracker';
import { parseSettings } from '../../provider-utils/settings';
import { tfRecord } from './crc32c';
import { encodeEvent } from './event-proto';
import { tensorBoardTrackerSettingsSchema, type TensorBoardTrackerSettings } from './settings';

/** The first event of every event file (TensorFlow's EventsWriter writes it). */
const FILE_VERSION = 'brain.Event:2';

const FILE_PATTERN = /^events\.out\.tfevents\.(\d+)\./;

/** A params table as Markdown, the text plugin's format. */
function paramsMarkdown(params: Readonly<Record<string, TrackerParamValue>>): string {
  const cell = (text: string) => text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const rows = Object.entries(params).map(([key, value]) => `| ${cell(key)} | ${cell(String(value))} |`);
  return ['| parameter | value |', '| --- | --- |', ...rows].join('\n');
}

/**
 * TensorBoard event files written directly: TFRecord framing with masked CRC-32C around Event
 * protos, scalars as `simple_value` summaries, the run's parameters as a text summary (`config`).
 * No TensorFlow and no native package. A resumed run writes a new file in the same folder, which
 * sorts after the earlier ones and starts with a SessionLog START at the step the run continues
 * at: TensorBoard's readers then drop what the interrupted attempt wrote from that step on, and
 * the steps run again replace it (TensorFlow's restart rule).
 */
export function createTensorBoardTracker(settings: TensorBoardTrackerSettings): Tracker & {
  /** The event file this tracker writes (after `doStart`). */
  readonly file: string | null;
} {
  const { logDir } = parseSettings('createTensorBoardTracker', tensorBoardTrackerSettingsSchema, settings);
  let handle: FileHandle | null = null;
  let file: string | null = null;

  const write = async (events: readonly Uint8Array[]) => {
    if (!handle)
      throw new InvalidArgumentError({
        argument: 'tracker',
        message: 'the TensorBoard tracker is not started (call doStart first) or already finished',
      });
    const records = events.map(tfRecord);
    const bytes = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
    let at = 0;
    for (const record of records) {
      bytes.set(record, at);
      at += record.length;
    }
    await handle.write(bytes);
  };

  return {
    specificationVersion: 'v1',
    provider: 'tensorboard',
    get file() {
      return file;
    },
    async doStart(start: TrackerStart, _options?: CallOptions): Promise<TrackerResume> {
      if (handle) return { logDir: resolve(logDir) };
      await mkdir(logDir, { recursive: true });
      // Readers take a folder's files in name order: a later file must sort after the earlier
      // ones, even when started within the same second as the last.
      const earlier = (await readdir(logDir))
        .map((name) => FILE_PATTERN.exec(name)?.[1])
        .filter((s): s is string => s !== undefined)
        .map(Number);
      const seconds = Math.max(Math.floor(Date.now() / 1000), ...earlier.map((s) => s + 1));
      file = join(
        logDir,
        `events.out.tfevents.${String(seconds).padStart(10, '0')}.${hostname()}.${process.pid}.0`,
      );
      handle = await open(file, 'wx');
      const now = Date.now() / 1000;
      await write([
        encodeEvent({ wallTime: now, fileVersion: FILE_VERSION }),
        // The steps run again replace what the interrupted attempt wrote from there on.
        ...(earlier.length > 0 && start.continuesAt !== null
          ? [encodeEvent({ wallTime: now, step: start.continuesAt, sessionLog: 'start' })]
          : []),
      ]);
      return { logDir: resolve(logDir) };
    },
    async doLogParams(params) {
      await write([
        encodeEvent({
          wallTime: Date.now() / 1000,
          values: [{ tag: 'config', text: paramsMarkdown(params) }],
        }),
      ]);
    },
    async doLogScalars(scalars: readonly TrackerScalars[]) {
      await write(
        scalars.map((s) =>
          encodeEvent({
            wallTime: s.time / 1000,
            step: s.step,
            values: Object.entries(s.values).map(([tag, scalar]) => ({ tag, scalar })),
          }),
        ),
      );
    },
    async doFinish(_status: TrackerRunStatus) {
      const held = handle;
      handle = null;
      await held?.close();
    },
  };
}

import { resolveEpisodeConfig, type EpisodeConfig } from '../core/episode/config';
import { InvalidArgumentError } from '../core/errors';

/**
 * Characters one token of the trainer's tokenizer can stand for, as a bound: an English BPE token
 * averages about 4; the longest in common vocabularies (runs of spaces, dashes) are a few dozen.
 */
export const CHARACTERS_PER_TURN_TOKEN = 64;
/** Room in a frame for what is not the action text: the envelope, an inline task, the metadata. */
const FRAME_ALLOWANCE_BYTES = 64 * 1024;
/** JSON's longest spelling of one UTF-16 unit (`\uXXXX`, as Python's json.dumps writes non-ASCII). */
const JSON_BYTES_PER_CHARACTER = 6;

/**
 * Caps on what one client may send and leave unread; each has a default from the served episode.
 */
export interface ServerLimitOptions {
  /** The longest step text, in characters; default 64 × the served episode's `maxTurnTokens`. */
  maxActionChars?: number;
  /** The largest frame, in bytes (closed with 1009 beyond); default 6 × maxActionChars + 64 KiB. */
  maxMessageBytes?: number;
  /** Unread replies (bytes) beyond which the server stops reading from that client; default 1 MiB. */
  maxBufferedBytes?: number;
  /** A client that has not read its replies this long after reading from it stopped is disconnected; default 60 s. */
  unreadTimeoutMs?: number;
}

export interface ServerLimits {
  maxActionChars: number;
  /** Where maxActionChars comes from, for the error that refuses a longer turn. */
  maxActionCharsSource: string;
  maxMessageBytes: number;
  maxBufferedBytes: number;
  unreadTimeoutMs: number;
  /** Frames read ahead of the one being handled; beyond it reading pauses until the session catches up. */
  maxQueuedFrames: number;
}

function positive(argument: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!(Number.isInteger(value) && value > 0))
    throw new InvalidArgumentError({ argument, message: `must be a positive integer, got ${value}` });
  return value;
}

/** The caps of one server: what an assistant turn can be, and how far a client may run ahead. */
export function resolveServerLimits(
  episode: Partial<EpisodeConfig>,
  options: ServerLimitOptions = {},
): ServerLimits {
  const given = positive('maxActionChars', options.maxActionChars);
  const turnTokens = resolveEpisodeConfig(episode).maxTurnTokens;
  const maxActionChars = given ?? CHARACTERS_PER_TURN_TOKEN * turnTokens;
  return {
    maxActionChars,
    maxActionCharsSource:
      given !== undefined
        ? 'maxActionChars'
        : `${CHARACTERS_PER_TURN_TOKEN} a token × searcher.episode.maxTurnTokens ${turnTokens}; raise maxTurnTokens in the server's configuration for longer turns`,
    maxMessageBytes:
      positive('maxMessageBytes', options.maxMessageBytes) ??
      JSON_BYTES_PER_CHARACTER * maxActionChars + FRAME_ALLOWANCE_BYTES,
    maxBufferedBytes: positive('maxBufferedBytes', options.maxBufferedBytes) ?? 1024 * 1024,
    unreadTimeoutMs: positive('unreadTimeoutMs', options.unreadTimeoutMs) ?? 60_000,
    maxQueuedFrames: 16,
  };
}

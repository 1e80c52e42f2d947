import type { PortGateway } from '../calls/gateway';
import type { SftRow } from './distill';
import {
  ACTION_TAG_PATTERN,
  checkThinkRewrite,
  THINK_REWRITE_INSTRUCTIONS,
  thinkSpans,
  type RewriteRejection,
} from './think-rewrite';

/** The rows after think-only rewriting, and counts of what was rewritten, reverted and dropped. */
export interface RewriteReport {
  rows: SftRow[];
  counts: {
    rows: number;
    dropped: number;
    turns: number;
    rewritten: number;
    failedCalls: number;
    rejections: Record<RewriteRejection, number>;
  };
}

/**
 * Think-only rewriting through the Generator port (docs/method.md#think-only-rewriting): each
 * assistant turn is sent with the instructions, and the answer passes `checkThinkRewrite`. A
 * failed call keeps the turn as it was; a row with a polluted think (an action tag inside it) is
 * dropped before any call is spent on it.
 */
export async function rewriteThinks(
  gateway: PortGateway,
  rows: readonly SftRow[],
  options: { signal?: AbortSignal; instructions?: string } = {},
): Promise<RewriteReport> {
  const rejections: Record<RewriteRejection, number> = {
    outside_changed: 0,
    think_count_changed: 0,
    action_tag_in_original_think: 0,
    action_tag_added: 0,
    observation_claim_added: 0,
  };
  const counts = { rows: rows.length, dropped: 0, turns: 0, rewritten: 0, failedCalls: 0, rejections };
  const out: SftRow[] = [];
  for (const row of rows) {
    const messages = [];
    let dropped = false;
    for (const message of row.messages) {
      if (message.role !== 'assistant' || !message.content.includes('<think>')) {
        messages.push(message);
        continue;
      }
      counts.turns++;
      if (thinkSpans(message.content).some((think) => ACTION_TAG_PATTERN.test(think))) {
        rejections.action_tag_in_original_think++;
        dropped = true;
        break;
      }
      let rewritten: string;
      try {
        rewritten = (
          await gateway.answer(
            `${options.instructions ?? THINK_REWRITE_INSTRUCTIONS}\n\n${message.content}`,
            [],
            options.signal,
          )
        ).answer;
      } catch {
        counts.failedCalls++;
        messages.push(message);
        continue;
      }
      const check = checkThinkRewrite(message.content, rewritten);
      for (const reason of check.rejections) rejections[reason]++;
      if (check.text === null) {
        dropped = true;
        break;
      }
      if (check.text !== message.content) counts.rewritten++;
      messages.push({ ...message, content: check.text });
    }
    if (dropped) counts.dropped++;
    else out.push({ ...row, messages });
  }
  return { rows: out, counts };
}

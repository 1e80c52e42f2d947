import type { PortGateway } from '../calls/gateway';
import type { Evidence } from '../../ports/types';
import { AbortedError } from '../errors';
import { answerScoreOf } from './episodes';
import { labelCandidate, labelGoldenReview, type Verdict, type VerificationCandidate } from './verification';

/** What `verifyCandidates` needs besides the gateway: the golden evidence of a candidate. */
export interface VerifyOptions {
  /** The golden page(s) of a prompt as evidence; `[]` when they cannot be found (the label is then UNCERTAIN). */
  goldenEvidence: (candidate: VerificationCandidate) => Promise<readonly Evidence[]>;
  signal?: AbortSignal;
  /** Calls in flight at once (the gateway's caps still hold). */
  concurrency?: number;
  /** After each candidate: how many are done of how many. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Ground-truth verification through the ports (docs/method.md#ground-truth-verification): the
 * Generator answers the question from the golden page alone, the Judge scores that answer against
 * the reference and the rollout's answer against it, and `labelCandidate` names the case. A
 * bucket-0 review has no rollout answer to compare: the judge's score of the golden-page answer
 * against the reference decides alone (`labelGoldenReview`). A failed call labels the candidate
 * UNCERTAIN with the failure kept in `detail`.
 */
export async function verifyCandidates(
  gateway: PortGateway,
  candidates: readonly VerificationCandidate[],
  options: VerifyOptions,
): Promise<Verdict[]> {
  const verdicts: Verdict[] = new Array(candidates.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < candidates.length) {
      const index = next++;
      const candidate = candidates[index]!;
      const { episode } = candidate;
      const base = { promptUid: episode.promptUid, sampleId: episode.sampleId, reason: candidate.reason };
      try {
        const evidence = await options.goldenEvidence(candidate);
        if (evidence.length === 0 || episode.reference === null) {
          verdicts[index] = {
            ...base,
            label: 'UNCERTAIN',
            detail: { why: evidence.length === 0 ? 'golden page not found' : 'no reference' },
          };
          continue;
        }
        const golden = await gateway.answer(episode.query, evidence, options.signal);
        const goldenVerdict = await gateway.score(
          episode.query,
          golden.answer,
          episode.reference,
          options.signal,
        );
        if (candidate.reason === 'bucket0_review') {
          verdicts[index] = {
            ...base,
            label: labelGoldenReview(goldenVerdict.score),
            detail: {
              goldenPages: [...new Set(evidence.map((e) => e.basename))],
              goldenAnswer: golden.answer,
              goldenScore: goldenVerdict.score,
              reference: episode.reference,
              judgeRaw: goldenVerdict.raw ?? null,
            },
          };
          continue;
        }
        const agreement = await gateway.score(episode.query, episode.answer, golden.answer, options.signal);
        const label = labelCandidate({
          goldenScore: goldenVerdict.score,
          rolloutVsGolden: agreement.score,
          rolloutJudge: answerScoreOf(episode) ?? 0,
        });
        verdicts[index] = {
          ...base,
          label,
          detail: {
            goldenAnswer: golden.answer,
            goldenScore: goldenVerdict.score,
            rolloutAnswer: episode.answer,
            rolloutVsGolden: agreement.score,
            reference: episode.reference,
            judgeRaw: goldenVerdict.raw ?? null,
          },
        };
      } catch (error) {
        // A stopped verification is not a verdict: it stops, and nothing is written.
        if (AbortedError.isInstance(error)) throw error;
        verdicts[index] = {
          ...base,
          label: 'UNCERTAIN',
          detail: { failure: error instanceof Error ? error.message : String(error) },
        };
      } finally {
        options.onProgress?.(++done, candidates.length);
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 8, candidates.length)) }, worker),
  );
  return verdicts;
}

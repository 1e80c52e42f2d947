import { describe, expect, it } from 'vitest';
import { faultSuite } from '../../../test/support/fault-suite';
import { serverPerTest } from '../../../test/support/server-per-test';
import { RecordedServer, type Reply } from '../../../test/support/recorded-server';
import { runEpisodes } from '../../core/episode/run-episodes';
import { createProtocolTokenizer } from '../../core/protocol/tokenizer';
import { createMockSearchEngine } from '../mock/mock-search-engine';
import { createReliableCaller } from '../../core/calls/reliable-call';
import { createOpenAICompatibleCompletions, createOpenAICompatiblePolicy } from './compatible-policy';

const tokenizer = createProtocolTokenizer();
const server = serverPerTest(() => RecordedServer.start());

/** A vLLM /v1/completions reply (return_tokens_as_token_ids, logprobs: 1) for the given text. */
function completion(text: string, finish: 'stop' | 'length' = 'stop', logProb = -0.25): Reply {
  const ids = tokenizer.encode(text);
  return {
    json: {
      id: 'cmpl-9f1c2b7d3e4a4f0e8b6a5c4d3e2f1a0b',
      object: 'text_completion',
      created: 1757540514,
      model: 'Qwen/Qwen2.5-7B-Instruct',
      choices: [
        {
          index: 0,
          text,
          logprobs: {
            text_offset: ids.map((_id, i) => i),
            token_logprobs: ids.map((_id, i) => logProb - i * 0.01),
            tokens: ids.map((id) => `token_id:${id}`),
            top_logprobs: ids.map((id) => ({ [`token_id:${id}`]: logProb })),
          },
          finish_reason: finish,
          stop_reason: finish === 'stop' ? text.slice(text.lastIndexOf('</')) : null,
          prompt_logprobs: null,
        },
      ],
      usage: { prompt_tokens: 100, total_tokens: 100 + ids.length, completion_tokens: ids.length },
    },
  };
}

const pages = [{ basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5 billion dollars' }];
const prompt = {
  uid: 'q',
  question: 'Acme revenue 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};

describe('createOpenAICompatiblePolicy', () => {
  const policy = () =>
    createOpenAICompatiblePolicy({
      baseURL: `${server().url}/v1`,
      model: 'Qwen/Qwen2.5-7B-Instruct',
      tokenizer,
      reliability: { maxRetries: 0 },
    });

  it('runs an episode: token ids and log-probs are the server’s, every turn sends the whole sequence', async () => {
    server().reply(
      completion('<think>find it</think>\n<search>acme revenue</search>'),
      completion('<search_complete>true</search_complete>'),
    );
    const [episode] = await runEpisodes(
      [{ prompt, groupId: 'g', rolloutIndex: 0 }],
      { policy: policy(), searchEngine: createMockSearchEngine({ pages }) },
      { config: { temperature: 0.7, topP: 0.9 } },
    );
    const t = episode!.trajectory;
    expect(t.terminated).toBe('complete');
    expect(t.retrievedBasenames).toEqual(['acme_2.png']);
    const first = server().requests[0]!.json as Record<string, unknown>;
    expect(server().requests[0]!.path).toBe('/v1/completions');
    expect(first).toMatchObject({
      model: 'Qwen/Qwen2.5-7B-Instruct',
      logprobs: 1,
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 256,
      include_stop_str_in_output: true,
      return_tokens_as_token_ids: true,
      stop: ['</search>', '</bbox>', '</search_complete>', '</answer>'],
    });
    expect(first.prompt).toEqual(t.fullInputIds.slice(0, t.promptLength));
    // The second request continues the exact token sequence: prompt, turn 1, observation.
    const secondPrompt = (server().requests[1]!.json as { prompt: number[] }).prompt;
    expect(secondPrompt).toEqual(t.fullInputIds.slice(0, secondPrompt.length));
    expect(t.tokenSteps[0]).toMatchObject({
      tokenId: tokenizer.specialTokenId('<think>'),
      logProb: -0.25,
      position: t.promptLength,
    });
    expect(t.tokenSteps[1]!.logProb).toBeCloseTo(-0.26, 12);
  });

  it('ends only that episode when the server returns no token ids', async () => {
    server().reply({
      json: {
        ...(completion('<search>x</search>') as { json: { choices: Array<Record<string, unknown>> } }).json,
        choices: [
          {
            index: 0,
            text: '<search>x</search>',
            logprobs: { tokens: ['<search>', 'x', '</search>'], token_logprobs: [-1, -1, -1] },
            finish_reason: 'stop',
          },
        ],
      },
    });
    const [episode] = await runEpisodes([{ prompt, groupId: 'g', rolloutIndex: 0 }], {
      policy: policy(),
      searchEngine: createMockSearchEngine({ pages }),
    });
    expect(episode!.trajectory.terminated).toBe('error');
    expect(episode!.trajectory.error!.message).toMatch(/return_tokens_as_token_ids/);
  });

  it('reads log-probs of given positions from prompt_logprobs', async () => {
    const ids = tokenizer.encode('<search>ab</search>');
    server().reply({
      json: {
        id: 'cmpl-1',
        object: 'text_completion',
        created: 1,
        model: 'm',
        choices: [
          {
            index: 0,
            text: 'x',
            finish_reason: 'length',
            logprobs: null,
            prompt_logprobs: [
              null,
              ...ids.slice(1).map((id, i) => ({
                [String(id)]: { logprob: -(i + 1) / 10, rank: 1, decoded_token: 'x' },
                '99999': { logprob: -9, rank: 2, decoded_token: 'y' },
              })),
            ],
          },
        ],
        usage: { prompt_tokens: 4, total_tokens: 5, completion_tokens: 1 },
      },
    });
    const logProbs = await policy().logProbs({ inputIds: [ids], positions: [[1, 3]] });
    expect(logProbs).toEqual([[-0.1, -0.3]]);
    expect(server().requests[0]!.json).toMatchObject({ prompt: ids, max_tokens: 1, prompt_logprobs: 0 });
  });

  it("never sends OPENAI_API_KEY (OpenAI's key) to the compatible server", async () => {
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-real-openai-key-CANARY';
    try {
      server().reply(completion('<search>a</search>'));
      await createOpenAICompatibleCompletions({ baseURL: `${server().url}/v1`, model: 'm' }).doComplete({
        prompt: [1],
        max_tokens: 4,
      });
      expect(server().requests[0]!.headers.authorization).toBe('Bearer EMPTY');
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
  });

  it('does not train', async () => {
    await expect(
      policy().update({ inputIds: [], positions: [] }, () => ({ value: 0, gradNewLogProbs: [] })),
    ).rejects.toThrow(/runs rollouts only/);
    expect(policy().trainable).toBe(false);
  });
});

describe('OpenAI-compatible completions faults', () => {
  faultSuite({
    server,
    port: 'policy',
    adapter: () =>
      createOpenAICompatibleCompletions({ baseURL: `${server().url}/v1`, model: 'm', apiKey: 'EMPTY' }),
    call: (client, signal) => client.doComplete({ prompt: [1, 2, 3], max_tokens: 4 }, { signal }),
    // As the policy calls its client: through a reliable caller of its own.
    reliable: (client, policy, deps) => {
      const caller = createReliableCaller('policy', client.provider, policy, deps);
      return {
        provider: client.provider,
        doComplete: (request, options) =>
          caller.call('complete', (signal) => client.doComplete(request, { signal }), {
            args: [request],
            ...(options?.signal && { signal: options.signal }),
          }),
      };
    },
    success: completion('<search>a</search>'),
    rateLimited: {
      status: 429,
      json: { object: 'error', message: 'The server is overloaded', type: 'TooManyRequests', code: 429 },
    },
    serverError: {
      status: 500,
      json: { object: 'error', message: 'Internal Server Error', type: 'InternalServerError', code: 500 },
    },
    check: (choice) => expect(choice).toMatchObject({ text: '<search>a</search>' }),
  });
});

import { describe, expect, it } from 'vitest';
import { ACTION_TAGS, createProtocolTokenizer, parseAction, renderAction, TURN_STOP_TAGS } from './index';

describe('searcher-rl/protocol', () => {
  it('parses a turn decoded elsewhere with the SDK rules, and renders it back', () => {
    const turn = parseAction('<think>the founder</think><search>Globex founder</search>');
    expect(turn).toMatchObject({
      kind: 'valid',
      think: 'the founder',
      action: { type: 'search', query: 'Globex founder' },
    });
    if (turn.kind !== 'valid') throw new Error('expected a valid turn');
    expect(parseAction(renderAction(turn.action))).toMatchObject({ kind: 'valid', action: turn.action });
    expect(TURN_STOP_TAGS).toHaveLength(ACTION_TAGS.length);
  });

  it('says why a turn is invalid', () => {
    expect(parseAction('<search>a</search><search>b</search>')).toMatchObject({
      kind: 'valid',
      ignoredActions: ['<search>b</search>'],
    });
    expect(parseAction('no tags at all')).toMatchObject({ kind: 'invalid', reason: 'no_action' });
    expect(parseAction('<search> </search>')).toMatchObject({ kind: 'invalid', reason: 'empty_search' });
  });

  it('tokenizes the protocol tags as single tokens', () => {
    const tokenizer = createProtocolTokenizer();
    const ids = tokenizer.encode('<search>x</search>');
    expect(tokenizer.decode(ids)).toBe('<search>x</search>');
  });
});

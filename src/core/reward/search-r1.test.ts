import { describe, expect, it } from 'vitest';
import {
  checkAnswerCorrectness,
  checkFormatCorrectness,
  extractAnswer,
  NOT_FOUND_ANSWER,
  searchR1Reward,
} from './search-r1';

describe('checkFormatCorrectness (docs/method.md#search-r1-reward)', () => {
  it('accepts a search, its information, then the answer at the end', () => {
    expect(
      checkFormatCorrectness(
        '<think>a</think><search>q</search><information>i</information><think>b</think><answer>x</answer>',
      ),
    ).toBe(0.5);
    expect(checkFormatCorrectness('<answer>x</answer>\n')).toBe(0.5);
  });
  it.each([
    ['no answer', '<search>q</search><information>i</information>'],
    ['two answers', '<answer>a</answer><answer>b</answer>'],
    ['text after the answer', '<answer>a</answer> and more'],
    ['a search without information', '<search>q</search><answer>a</answer>'],
    ['information without a search', '<information>i</information><answer>a</answer>'],
    ['an unclosed search', '<search>q<information>i</information><answer>a</answer>'],
  ])('rejects %s', (_name, text) => {
    expect(checkFormatCorrectness(text)).toBe(-1.0);
  });
  it('removes think blocks before checking (an answer inside think does not count)', () => {
    expect(checkFormatCorrectness('<think><answer>draft</answer></think><answer>x</answer>')).toBe(0.5);
  });
});

describe('checkAnswerCorrectness (docs/method.md#search-r1-reward)', () => {
  it('scores exact 2.0, not-found 0.5, similar 1.0, different or empty 0', () => {
    expect(checkAnswerCorrectness('Paris', 'Paris')).toBe(2.0);
    expect(checkAnswerCorrectness(NOT_FOUND_ANSWER, 'Paris')).toBe(0.5);
    expect(checkAnswerCorrectness('paris france', 'Paris')).toBe(1.0);
    expect(checkAnswerCorrectness('Berlin', 'Paris')).toBe(0);
    expect(checkAnswerCorrectness('  ', 'Paris')).toBe(0);
  });
  it('compares lowercased text without whitespace', () => {
    expect(checkAnswerCorrectness('NEW YORK', 'new york')).toBe(1.0);
  });
});

describe('searchR1Reward', () => {
  it('adds format and answer, in [-1, 2.5]', () => {
    expect(
      searchR1Reward('<search>q</search><information>i</information><answer>Paris</answer>', 'Paris'),
    ).toEqual({ format: 0.5, answer: 2, total: 2.5 });
    expect(searchR1Reward('Paris', 'Paris')).toEqual({ format: -1, answer: 0, total: -1 });
    expect(extractAnswer('<answer>a</answer><answer> b </answer>')).toBe('b');
  });
});

describe('checkAnswerCorrectness: strict refuses the gaming classes (issue 41, docs/method.md#search-r1-reward)', () => {
  const question = 'What is the capital of France?';
  it.each([
    ['not Paris', 1.0],
    ['Paris or London', 1.0],
    ['Paris, London', 1.0],
    ['maybe Paris', 1.0],
    ['either Paris or Lyon', 0],
  ])('keeps the spec by default and gives 0 in strict mode: "%s"', (answer, spec) => {
    expect(checkAnswerCorrectness(answer, 'Paris')).toBe(spec);
    expect(checkAnswerCorrectness(answer, 'Paris', { strict: true, question })).toBe(0);
  });
  it('keeps exact, not-found and honest similar answers in strict mode', () => {
    const strict = { strict: true, question };
    expect(checkAnswerCorrectness('Paris', 'Paris', strict)).toBe(2.0);
    expect(checkAnswerCorrectness(NOT_FOUND_ANSWER, 'Paris', strict)).toBe(0.5);
    expect(checkAnswerCorrectness('paris france', 'Paris', strict)).toBe(1.0);
    expect(checkAnswerCorrectness('It is Paris.', 'Paris', strict)).toBe(1.0);
    const restated = 'Is the capital of France Paris?';
    expect(checkAnswerCorrectness(restated, 'Paris', { strict: true, question: restated })).toBe(0);
    expect(searchR1Reward('<answer>Paris or Lyon</answer>', 'Paris', strict)).toEqual({
      format: 0.5,
      answer: 0,
      total: 0.5,
    });
  });
});

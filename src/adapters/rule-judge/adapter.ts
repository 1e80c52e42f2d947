import { defineAdapter } from '../../provider-utils/adapter-definition';
import { createRuleJudge } from './rule-judge';
import { ruleJudgeSettingsSchema } from './settings';

/** `adapters.judge: {type: 'rule', partialThreshold}`: exact match, then token overlap (SDK-free, built at once). */
export const ruleJudgeAdapter = defineAdapter({
  port: 'judge',
  type: 'rule',
  settings: ruleJudgeSettingsSchema,
  packages: [],
  create: (settings) => createRuleJudge(settings),
});

export { createRuleJudge, normaliseAnswer, type RuleJudge, type RuleJudgeSettings } from './rule-judge';

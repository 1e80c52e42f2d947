import { defineAdapter } from '../../provider-utils/adapter-definition';
import { createScriptedPolicy } from './scripted-policy';
import { scriptedPolicyConfigSchema } from './settings';

/** `adapters.policy: {type: 'scripted', script, logProb}`: turns written in advance (SDK-free, built at once). */
export const scriptedPolicyAdapter = defineAdapter({
  port: 'policy',
  type: 'scripted',
  settings: scriptedPolicyConfigSchema,
  packages: [],
  description: '`scripted` (turns written in advance)',
  create: (settings) => createScriptedPolicy(settings),
});

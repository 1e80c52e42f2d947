export {
  createScriptedPolicy,
  type ScriptedPolicy,
  type ScriptedPolicySettings,
  type Script,
  type ScriptContext,
  type ScriptedPolicyCalls,
} from './scripted-policy';

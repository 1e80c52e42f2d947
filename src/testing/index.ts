// For tests of agents, environments and adapters: time that moves only when told, session
// interception, and the closeness measures of the numeric contract tests.
export { createVirtualClock, type VirtualClock } from './virtual-clock';
export { interceptSessions } from './sessions';
export { relativeError, maxMatrixError } from './closeness';
export { rollTwoTurns, incrementalLogProbError, type TwoTurnRollout } from './policy-contract';

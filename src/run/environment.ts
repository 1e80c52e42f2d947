import { InvalidArgumentError } from '../core/errors';
import type { RunConfig } from './config';
import { datasetEnvironmentDefinition } from './environments/dataset';
import { slideEnvironmentDefinition } from './environments/slides';
import type {
  EnvironmentDefinition,
  RunEnvironment,
  ServedEnvironmentChoice,
  ServedEnvironmentSource,
} from './environments/types';
import type { RunOptions } from './progress';

export { cropTurnMask } from './environments/slides';
export type {
  DemonstrationTarget,
  EnvironmentDefinition,
  RunEnvironment,
  ServedEnvironmentChoice,
  ServedEnvironmentSource,
} from './environments/types';

/**
 * The environments a run trains on and the server serves, one line each, in the order they are
 * tried: the first whose `choosesRun` (or `choosesServed`) accepts the settings is the one. Your
 * own data when a dataset (a task file) is named, else the slide environment.
 */
export const ENVIRONMENTS: readonly EnvironmentDefinition[] = [
  datasetEnvironmentDefinition,
  slideEnvironmentDefinition,
];

function chosen(test: (definition: EnvironmentDefinition) => boolean, what: string): EnvironmentDefinition {
  const definition = ENVIRONMENTS.find(test);
  if (!definition)
    throw new InvalidArgumentError({
      argument: what,
      message: `no environment accepts these settings (known: ${ENVIRONMENTS.map((e) => e.kind).join(', ')})`,
    });
  return definition;
}

/** Builds (or reuses) a run's environment: the one of `ENVIRONMENTS` its configuration chooses. */
export async function prepareEnvironment(
  config: RunConfig,
  options: RunOptions = {},
): Promise<RunEnvironment> {
  return chosen((e) => e.choosesRun(config), 'config').openRun(config, options);
}

/** What a server serves: the ports and tasks of the environment of `ENVIRONMENTS` its settings choose. */
export async function openServedEnvironment(
  choice: ServedEnvironmentChoice,
): Promise<ServedEnvironmentSource> {
  return chosen((e) => e.choosesServed(choice), 'settings').openServed(choice);
}

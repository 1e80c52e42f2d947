// searcher-rl/mlflow: a run's figures on an MLflow tracking server (its REST API, with fetch).
export { createMlflowTracker } from './tracker';
export { mlflowTrackerSettingsSchema, type MlflowTrackerSettings } from './settings';

/** Options every port method takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** What every adapter may offer so that a setup mistake fails before the first step, not as missing rewards. */
export interface SetupCheck {
  /**
   * Checks what the adapter can check without a billed call (its API key, its settings, a file it
   * needs); throws a typed error saying what to fix. Called once by a Searcher before its first step.
   */
  doCheck?(options?: CallOptions): Promise<void>;
}

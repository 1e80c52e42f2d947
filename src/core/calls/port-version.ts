import { UnsupportedPortVersionError, type PortName } from '../errors';

/**
 * The specification versions of each port that this core calls. A port's interface
 * (`src/ports`) says which it is with `readonly specificationVersion`; an adapter written
 * against another version has other methods or other meanings, so it is refused up front
 * rather than called as if it were this one.
 */
export const SUPPORTED_PORT_VERSIONS: Readonly<Record<PortName, readonly string[]>> = {
  searchEngine: ['v1'],
  generator: ['v1'],
  judge: ['v1'],
  imageOps: ['v1'],
  embedder: ['v1'],
  store: ['v1'],
  policy: ['v1'],
  icdScorer: ['v1'],
  tracker: ['v1'],
};

/** Throws UnsupportedPortVersionError unless `adapter` declares a version of port `port` that the core supports. */
export function checkPortVersion(port: PortName, adapter: unknown): void {
  const declared = (adapter as { specificationVersion?: unknown } | null)?.specificationVersion;
  const supported = SUPPORTED_PORT_VERSIONS[port];
  if (typeof declared === 'string' && supported.includes(declared)) return;
  const provider = (adapter as { provider?: unknown } | null)?.provider;
  throw new UnsupportedPortVersionError({
    port,
    provider: typeof provider === 'string' ? provider : '(unnamed)',
    version: String(declared),
    supported,
  });
}

/** A vendor client made at its first use, and the key it was made with. */
export interface LazyClient<Client> {
  /** The client, made now if it was not yet (a missing key throws here, saying how to provide it). */
  get(): Client;
  /** The key the client was made with (undefined before `get`): what the adapter redacts from its errors. */
  readonly key: string | undefined;
}

/**
 * One vendor client per adapter, made at the first call rather than at the factory, so that a
 * missing key fails then, saying both ways to provide it (`loadApiKey`), and an adapter can be
 * configured before its key is set. `resolveKey` runs once; `make` builds the client with it.
 */
export function lazyClient<Client>(
  resolveKey: () => string,
  make: (key: string) => Client,
): LazyClient<Client> {
  let client: Client | undefined;
  let key: string | undefined;
  return {
    get() {
      if (client === undefined) {
        key = resolveKey();
        client = make(key);
      }
      return client;
    },
    get key() {
      return key;
    },
  };
}

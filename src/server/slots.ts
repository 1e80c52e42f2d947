/** What a session asks for: a slot of the server's cap and of its client's share of it. */
export interface SlotGrant {
  ok: boolean;
  /** Sessions active on the server (with this one when granted) and the server's cap. */
  active: number;
  max: number;
  /** This client's sessions (with this one when granted) and the per-client cap. */
  clientActive: number;
  clientMax: number;
  /** Which cap refused it, when one did. */
  refusedBy?: 'server' | 'client';
}

/**
 * The session cap, shared by every worker of a server (the cluster primary holds the count), and
 * the per-client cap inside it (docs/scale-out.md#fair-sharing): `client` is the key a session is
 * counted under (`clientKeyOf`).
 */
export interface SessionSlots {
  /** Takes a slot for a session of `client` if the server's cap and the client's share allow it. */
  acquire(client: string): Promise<SlotGrant>;
  /** Gives back a slot `client` held. */
  release(client: string): void;
}

/** The default per-client cap: half the server's, at least 1, so that one client cannot take every slot. */
export function defaultSessionsPerClient(maxSessions: number): number {
  return Math.max(1, Math.floor(maxSessions / 2));
}

/** The counting both caps share, in one process (a server's own, or the cluster primary's). */
export function createSlotCounter(max: number, perClient: number) {
  const byClient = new Map<string, number>();
  let active = 0;
  return {
    get active() {
      return active;
    },
    acquire(client: string): SlotGrant {
      const clientActive = byClient.get(client) ?? 0;
      const refusedBy = active >= max ? 'server' : clientActive >= perClient ? 'client' : undefined;
      if (refusedBy) return { ok: false, active, max, clientActive, clientMax: perClient, refusedBy };
      active++;
      byClient.set(client, clientActive + 1);
      return { ok: true, active, max, clientActive: clientActive + 1, clientMax: perClient };
    },
    release(client: string, count = 1) {
      const held = byClient.get(client) ?? 0;
      if (held === 0) return;
      const freed = Math.min(held, count);
      active = Math.max(0, active - freed);
      if (held - freed === 0) byClient.delete(client);
      else byClient.set(client, held - freed);
    },
  };
}

export function createLocalSlots(max: number, perClient = defaultSessionsPerClient(max)): SessionSlots {
  const counter = createSlotCounter(max, perClient);
  return {
    async acquire(client) {
      return counter.acquire(client);
    },
    release(client) {
      counter.release(client);
    },
  };
}

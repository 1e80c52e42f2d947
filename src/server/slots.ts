/** The session cap, shared by every worker of a server (the cluster primary holds the count). */
export interface SessionSlots {
  acquire(): Promise<{ ok: boolean; active: number; max: number }>;
  release(): void;
}

export function createLocalSlots(max: number): SessionSlots {
  let active = 0;
  return {
    async acquire() {
      if (active >= max) return { ok: false, active, max };
      active++;
      return { ok: true, active, max };
    },
    release() {
      active = Math.max(0, active - 1);
    },
  };
}

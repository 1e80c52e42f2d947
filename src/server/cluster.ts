import cluster, { type Worker } from 'node:cluster';
import { createSlotCounter, defaultSessionsPerClient, type SessionSlots, type SlotGrant } from './slots';

type SlotMessage =
  | { kind: 'slot:acquire'; id: number; client: string }
  | { kind: 'slot:release'; client: string }
  | ({ kind: 'slot:reply'; id: number } & SlotGrant);

/**
 * The primary's side of the session caps: it holds the port (node:cluster hands connections to
 * workers) and counts every worker's sessions, by client too, so both caps hold for the whole
 * server. A worker that exits gives its slots back.
 */
export function runSlotPrimary(
  max: number,
  perClient = defaultSessionsPerClient(max),
): { attach(worker: Worker): void; readonly active: number } {
  const counter = createSlotCounter(max, perClient);
  // What each worker holds, by client: given back when the worker exits.
  const held = new Map<number, Map<string, number>>();
  return {
    get active() {
      return counter.active;
    },
    attach(worker) {
      const mine = new Map<string, number>();
      held.set(worker.id, mine);
      worker.on('message', (message: SlotMessage) => {
        if (message?.kind === 'slot:acquire') {
          const client = String(message.client);
          const grant = counter.acquire(client);
          if (grant.ok) mine.set(client, (mine.get(client) ?? 0) + 1);
          worker.send({ kind: 'slot:reply', id: message.id, ...grant } satisfies SlotMessage);
        } else if (message?.kind === 'slot:release') {
          const client = String(message.client);
          const count = mine.get(client) ?? 0;
          if (count === 0) return;
          counter.release(client);
          if (count === 1) mine.delete(client);
          else mine.set(client, count - 1);
        }
      });
      worker.on('exit', () => {
        for (const [client, count] of mine) counter.release(client, count);
        held.delete(worker.id);
      });
    },
  };
}

/** A worker's slots: asked of the primary over the cluster channel. */
export function createClusterSlots(): SessionSlots {
  let next = 0;
  const pending = new Map<number, (grant: SlotGrant) => void>();
  process.on('message', (message: SlotMessage) => {
    if (message?.kind !== 'slot:reply') return;
    const { kind: _kind, id, ...grant } = message;
    pending.get(id)?.(grant);
    pending.delete(id);
  });
  return {
    acquire(client) {
      const id = next++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        process.send!({ kind: 'slot:acquire', id, client } satisfies SlotMessage);
      });
    },
    release(client) {
      if (process.connected) process.send!({ kind: 'slot:release', client } satisfies SlotMessage);
    },
  };
}

export { cluster };

import cluster, { type Worker } from 'node:cluster';
import type { SessionSlots } from './slots';

type SlotMessage =
  | { kind: 'slot:acquire'; id: number }
  | { kind: 'slot:release' }
  | { kind: 'slot:reply'; id: number; ok: boolean; active: number; max: number };

/**
 * The primary's side of the session cap: it holds the port (node:cluster hands connections to
 * workers) and counts every worker's sessions, so the cap holds for the whole server. A worker that
 * exits gives its slots back.
 */
export function runSlotPrimary(max: number): { attach(worker: Worker): void; readonly active: number } {
  const perWorker = new Map<number, number>();
  const total = () => [...perWorker.values()].reduce((a, b) => a + b, 0);
  return {
    get active() {
      return total();
    },
    attach(worker) {
      perWorker.set(worker.id, 0);
      worker.on('message', (message: SlotMessage) => {
        if (message?.kind === 'slot:acquire') {
          const active = total();
          const ok = active < max;
          if (ok) perWorker.set(worker.id, (perWorker.get(worker.id) ?? 0) + 1);
          worker.send({
            kind: 'slot:reply',
            id: message.id,
            ok,
            active: ok ? active + 1 : active,
            max,
          } satisfies SlotMessage);
        } else if (message?.kind === 'slot:release') {
          perWorker.set(worker.id, Math.max(0, (perWorker.get(worker.id) ?? 0) - 1));
        }
      });
      worker.on('exit', () => perWorker.delete(worker.id));
    },
  };
}

/** A worker's slots: asked of the primary over the cluster channel. */
export function createClusterSlots(): SessionSlots {
  let next = 0;
  const pending = new Map<number, (reply: { ok: boolean; active: number; max: number }) => void>();
  process.on('message', (message: SlotMessage) => {
    if (message?.kind !== 'slot:reply') return;
    pending.get(message.id)?.({ ok: message.ok, active: message.active, max: message.max });
    pending.delete(message.id);
  });
  return {
    acquire() {
      const id = next++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        process.send!({ kind: 'slot:acquire', id } satisfies SlotMessage);
      });
    },
    release() {
      if (process.connected) process.send!({ kind: 'slot:release' } satisfies SlotMessage);
    },
  };
}

export { cluster };

// The load-generating client of `npm run bench:serve`, in its own process: SESSIONS OpenEnv sessions
// against a running serve-env, each running whole episodes until the deadline (a search for the
// question, a crop of the page shown, search_complete, the reward at done). The crop's box moves
// from episode to episode (as a policy's would), so no cache of one crop can stand in for cropping.
// Prints one JSON line with its counts and every step's latency, then keeps its sessions open until
// stdin closes (so that the bench can try one connection beyond the cap while they are held).
//   BENCH_SERVE_CLIENT='{"url":"ws://127.0.0.1:8000/ws","sessions":64,"startAt":…,"seconds":10,"offset":0}'
import { openSession, type TestSession } from '../test/support/ws-test-client';

const { url, sessions, startAt, seconds, offset } = JSON.parse(process.env.BENCH_SERVE_CLIENT ?? '{}') as {
  url: string;
  sessions: number;
  startAt: number;
  seconds: number;
  offset: number;
};
const httpBase = url.replace(/^ws/, 'http').replace(/\/ws$/, '');
const tasks: Array<{ id: string; question: string }> = [];
for (let offsetTasks = 0; ; ) {
  const page = (await (await fetch(`${httpBase}/tasks?offset=${offsetTasks}&limit=1000`)).json()) as {
    total: number;
    tasks: Array<{ id: string; question: string }>;
  };
  tasks.push(...page.tasks);
  offsetTasks += page.tasks.length;
  if (page.tasks.length === 0 || offsetTasks >= page.total) break;
}

type Reply = {
  observation: { text: string; images: string[]; metadata: Record<string, unknown> };
  reward: number | null;
  done: boolean;
};

const stepMs: number[] = [];
let started = 0;
let finished = 0;
let rewarded = 0;
let missing = 0;
let errors = 0;
let imagesReceived = 0;
let imageChars = 0;
const firstError: string[] = [];

async function timed(session: TestSession, frame: unknown): Promise<Reply> {
  const t0 = performance.now();
  const reply = await session.request(frame);
  stepMs.push(performance.now() - t0);
  if (reply.type === 'error') throw new Error(String(reply.data.message));
  const data = reply.data as Reply;
  for (const image of data.observation.images) {
    if (!image.startsWith('data:image/')) throw new Error(`not an image data URI: ${image.slice(0, 40)}`);
    imagesReceived++;
    imageChars += image.length;
  }
  return data;
}

/** A box inside the 640x360 page the policy is shown, a different one each episode. */
function cropBox(session: number, episode: number): [number, number, number, number] {
  const k = session * 31 + episode * 17;
  const width = 160 + ((k * 37) % 321);
  const height = 90 + ((k * 53) % 181);
  const x1 = (k * 97) % (640 - width + 1);
  const y1 = (k * 61) % (360 - height + 1);
  return [x1, y1, x1 + width, y1 + height];
}

async function run(id: number, session: TestSession, deadline: number) {
  for (let n = 0; Date.now() < deadline; n++) {
    const task = tasks[((offset + id) * 7919 + n) % tasks.length]!;
    started++;
    try {
      const reset = await session.request({
        type: 'reset',
        data: { seed: n, episode_id: `b${offset + id}-${n}`, task: task.id },
      });
      if (reset.type === 'error') throw new Error(String(reset.data.message));
      const page = await timed(session, {
        type: 'step',
        data: { text: `<think>search</think>\n<search>${task.question}</search>` },
      });
      let last = page;
      if (!page.done)
        last = await timed(session, {
          type: 'step',
          data: { text: `<think>zoom</think>\n<bbox>${JSON.stringify(cropBox(offset + id, n))}</bbox>` },
        });
      if (!last.done)
        last = await timed(session, {
          type: 'step',
          data: { text: '<think>done</think>\n<search_complete>true</search_complete>' },
        });
      if (!last.done) throw new Error('episode not done after search_complete');
      finished++;
      if (last.observation.metadata.reward_status === 'ok') rewarded++;
      else missing++;
    } catch (error) {
      errors++;
      if (firstError.length < 5) firstError.push(`session ${offset + id}: ${(error as Error).message}`);
    }
  }
}

const opened = await Promise.all(Array.from({ length: sessions }, () => openSession(url)));
await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await Promise.all(opened.map((session, id) => run(id, session, startAt + seconds * 1000)));
const elapsedS = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${JSON.stringify({
    started,
    finished,
    rewarded,
    missing,
    errors,
    firstError,
    elapsedS,
    cpuMs: (cpu.user + cpu.system) / 1000,
    imagesReceived,
    imageChars,
    stepMs: stepMs.map((ms) => Math.round(ms * 100) / 100),
  })}\n`,
);
process.stdin.resume();
process.stdin.once('end', () => {
  for (const session of opened) session.close();
  process.exit(0);
});

// Timing a step for the benches: warm up until it stops getting faster, then the median of repeats
// (wall and CPU seconds). bench/training.ts's figures come from here.

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function secondsOf(step: () => Promise<void>, cpu?: number[]): Promise<number> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await step();
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(c0);
  cpu?.push((used.user + used.system) / 1e6);
  return seconds;
}

/**
 * Steps until the step stops getting faster: at least WARMUP_MIN_SECONDS, then until the median of
 * the last WARMUP_WINDOW steps is no longer 5% below that of the WARMUP_WINDOW before them (at most
 * WARMUP_MAX_STEPS). tfjs-wasm's training step takes 10-15 steps to settle (3.6 s, then 2.2-2.5 s,
 * then 1.3-1.5 s from about step 9 in one run), so a single warm-up step left the median of a few
 * repeats on the slope and two runs 20% apart; ONNX Runtime's settles in about 5.
 */
const WARMUP_WINDOW = 3;
const WARMUP_MIN_SECONDS = 5;
const WARMUP_MAX_STEPS = 40;
async function warmUp(step: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  const started = performance.now();
  while (times.length < WARMUP_MAX_STEPS) {
    times.push(await secondsOf(step));
    const settled =
      times.length >= 2 * WARMUP_WINDOW &&
      median(times.slice(-WARMUP_WINDOW)) > 0.95 * median(times.slice(-2 * WARMUP_WINDOW, -WARMUP_WINDOW));
    if (settled && performance.now() - started >= WARMUP_MIN_SECONDS * 1000) break;
  }
  return times.length;
}

/** Median seconds of `step` over at least `minRepeats` calls and `minSeconds`, after `warmUp`. */
export async function timedSteps(
  step: () => Promise<void>,
  { minSeconds, minRepeats }: { minSeconds: number; minRepeats: number },
): Promise<{ seconds: number; cpuSeconds: number; repeats: number; warmupSteps: number }> {
  const warmupSteps = await warmUp(step);
  const times: number[] = [];
  // CPU seconds of this process per step (every thread's), steadier than wall time when other
  // processes share the cores.
  const cpu: number[] = [];
  const started = performance.now();
  while (times.length < minRepeats || performance.now() - started < minSeconds * 1000)
    times.push(await secondsOf(step, cpu));
  return { seconds: median(times), cpuSeconds: median(cpu), repeats: times.length, warmupSteps };
}

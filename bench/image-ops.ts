// CPU per image operation of serve-env's crop, this project's code beside sharp's, on the pages of
// bench:serve's slide environment: a page's PNG decode, the enlargement of a 320x180 box to 768x432
// (lanczos3), and the crop's PNG encode. CPU time of the whole process (process.cpuUsage: the zlib
// work on the thread pool included), after 5 warm-up calls. One JSON line per figure, with the load.
//   npx tsx bench/image-ops.ts   (BENCH_IMAGE_OPS_REPEATS=200)
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { enlargeLikeLibvips } from '../src/adapters/image/libvips-enlarge';
import { decodePng } from '../src/adapters/image/png-decode';
import { encodePngScanlines } from '../src/adapters/image/png-encode';
import { buildSlideEnvironment } from '../src/env/slides/build';

const REPEATS = Number(process.env.BENCH_IMAGE_OPS_REPEATS ?? 200);
const load1 = () => Number(loadavg()[0]!.toFixed(2));

async function cpuMsEach(n: number, run: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 5; i++) await run(i);
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await run(i);
  const used = process.cpuUsage(start);
  return Number(((used.user + used.system) / 1000 / n).toFixed(3));
}

const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-bench-image-ops-'));
try {
  await buildSlideEnvironment(dir, { seed: 3, decks: 24 });
  const files: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.png')) files.push(path);
    }
  };
  walk(dir);
  const pages = files.slice(0, 40).map((path) => new Uint8Array(readFileSync(path)));
  const page = (await decodePng(pages[0]!))!;
  const size = { width: page.width, height: page.height, channels: page.channels as 3 | 4 };
  const region = { left: 100, top: 60, width: 320, height: 180 };
  const out = { width: 768, height: 432, channels: size.channels };
  const figure = (name: string, ms: number, extra: Record<string, unknown> = {}) =>
    process.stdout.write(
      `${JSON.stringify({ bench: 'image-ops', figure: name, cpu_ms: ms, ...extra, load_1: load1() })}\n`,
    );
  figure('page_decode_here', await cpuMsEach(REPEATS, (i) => decodePng(pages[i % pages.length]!)), size);
  figure(
    'page_decode_sharp',
    await cpuMsEach(REPEATS, (i) =>
      sharp(pages[i % pages.length]!)
        .raw()
        .toBuffer(),
    ),
    size,
  );
  figure(
    'enlarge_here',
    await cpuMsEach(REPEATS, () => enlargeLikeLibvips(page, region, out.width, out.height)),
  );
  figure(
    'enlarge_sharp',
    await cpuMsEach(Math.ceil(REPEATS / 4), () =>
      sharp(page.data, { raw: size })
        .extract(region)
        .resize({ width: out.width, height: out.height, kernel: 'lanczos3', fit: 'fill' })
        .raw()
        .toBuffer(),
    ),
  );
  const scanlines = enlargeLikeLibvips(page, region, out.width, out.height, undefined, 'png-scanlines')!;
  const pixels = enlargeLikeLibvips(page, region, out.width, out.height)!;
  let bytes = 0;
  for (const level of [2, 6]) {
    const ms = await cpuMsEach(REPEATS, async () => {
      bytes = (await encodePngScanlines(out, scanlines.data, level)).length;
    });
    figure(`crop_encode_here_level_${level}`, ms, { kb: Number((bytes / 1024).toFixed(1)) });
  }
  const ms = await cpuMsEach(REPEATS, async () => {
    bytes = (await sharp(pixels.data, { raw: out }).png().toBuffer()).length;
  });
  figure('crop_encode_sharp_level_6', ms, { kb: Number((bytes / 1024).toFixed(1)) });
} finally {
  await rm(dir, { recursive: true, force: true });
}

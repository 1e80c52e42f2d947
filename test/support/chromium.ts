import { existsSync } from 'node:fs';

const QUIET = [
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * A Chromium to drive with playwright-core, wherever one can be had without a download: the
 * CHROMIUM_PATH environment variable, Debian's `chromium` package, else the build that the
 * `@sparticuz/chromium` dev dependency ships inside its npm package (unpacked on first use).
 */
export async function findChromium(): Promise<{ executablePath: string; args: string[]; source: string }> {
  const given = process.env.CHROMIUM_PATH;
  if (given) return { executablePath: given, args: ['--no-sandbox', ...QUIET], source: 'CHROMIUM_PATH' };
  for (const path of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (existsSync(path)) return { executablePath: path, args: ['--no-sandbox', ...QUIET], source: path };
  }
  const shipped = (await import('@sparticuz/chromium')).default;
  return {
    executablePath: await shipped.executablePath(),
    args: [...shipped.args, ...QUIET],
    source: '@sparticuz/chromium',
  };
}

// How every bench prints a figure: one JSON line, `{bench, figure, value, ...extra}`, the value to
// four significant digits (null where it could not be measured).

/** The printer of one bench's figures. */
export function figurePrinter(bench: string) {
  return (figure: string, value: number | null, extra: Record<string, unknown> = {}): void =>
    console.log(
      JSON.stringify({
        bench,
        figure,
        value: value === null ? null : Number(value.toPrecision(4)),
        ...extra,
      }),
    );
}

/**
 * The seeds and variants a learning bench runs, from two environment variables of comma-separated
 * values (`BENCH_X_SEEDS=1,2`, `BENCH_X_VARIANTS=a,b`), each checked: whole-number seeds, known
 * variants. Unset: seeds 1-3 and every variant.
 */
export function seedsAndVariants(
  prefix: string,
  known: readonly string[],
): { seeds: number[]; variants: string[] } {
  const list = (name: string, fallback: readonly string[]) => {
    const value = process.env[name];
    return value
      ? value
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [...fallback];
  };
  const variants = list(`${prefix}_VARIANTS`, known);
  for (const v of variants)
    if (!known.includes(v)) throw new Error(`${prefix}_VARIANTS: unknown '${v}' (${known.join(', ')})`);
  const seeds = list(`${prefix}_SEEDS`, ['1', '2', '3']);
  for (const s of seeds)
    if (!/^-?\d+$/.test(s)) throw new Error(`${prefix}_SEEDS: '${s}' is not a whole number`);
  return { seeds: seeds.map(Number), variants };
}

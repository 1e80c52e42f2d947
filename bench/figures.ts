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

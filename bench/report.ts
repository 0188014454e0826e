/** Number formatting, medians and plain-text tables for bench/run.ts. */

export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Smallest and largest of the finite values, undefined when there is none. */
export function range(values: readonly number[]): [number, number] | undefined {
  const finite = values.filter((v) => Number.isFinite(v));
  return finite.length ? [Math.min(...finite), Math.max(...finite)] : undefined;
}

export function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || !Number.isFinite(value)) return '-';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function mb(bytes: number | undefined): string {
  return bytes === undefined || !Number.isFinite(bytes) ? '-' : fmt(bytes / 2 ** 20, 0);
}

export function ratio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : `${value.toFixed(2)}x`;
}

/** Left-aligns the first column, right-aligns the others. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

// How full something is (a quota, a GPU's memory, a cache disk): the native <meter> with its label and the figures
// in words beside it, so the bar is never the only way to read the number. Unknown totals say so, once, where the
// bar would be, rather than drawing an empty bar that would read as zero.
import { useId } from "preact/hooks";

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"] as const;

/** Bytes as people read them (1.5 GiB). */
export function formatBytes(bytes: bigint | number): string {
  let value = Number(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${UNITS[unit] ?? "B"}`;
}

interface UsageBarProps {
  label: string;
  used: bigint | number | undefined;
  total: bigint | number | undefined;
  format?: (value: bigint | number) => string;
}

export function UsageBar({ label, used, total, format = formatBytes }: UsageBarProps) {
  const id = useId();
  const max = total === undefined ? undefined : Number(total);
  const value = used === undefined ? undefined : Number(used);
  const words =
    value === undefined
      ? `usage unknown${max === undefined || max <= 0 ? "" : ` (limit ${format(max)})`}`
      : max === undefined || max <= 0
        ? `${format(value)} used (no limit)`
        : `${format(value)} of ${format(max)} (${Math.round((value / max) * 100)}%)`;
  return (
    <div class="usage-bar">
      <label for={id}>{label}</label>
      {value !== undefined && max !== undefined && max > 0 ? (
        <>
          <meter id={id} min={0} max={max} value={Math.min(value, max)} low={max * 0.75} high={max * 0.9} optimum={0}>
            {words}
          </meter>
          <span class="usage-words">{words}</span>
        </>
      ) : (
        <output id={id}>{words}</output>
      )}
    </div>
  );
}

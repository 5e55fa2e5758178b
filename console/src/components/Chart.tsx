// A time-series chart (uPlot: canvas, small, fast on long series) of series the server already aggregated, with the
// same numbers as a table for screen readers and keyboard users (a canvas says nothing to them). Colours are a
// fixed palette readable on white; the legend names each series.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

const PALETTE = ["#0b5cad", "#b45309", "#15803d", "#a4161a", "#6d28d9", "#0e7490", "#be185d", "#4b5563", "#854d0e", "#1e3a8a", "#525252"];

export interface ChartSeries {
  label: string;
  values: number[];
}

interface ChartProps {
  title: string;
  /** Seconds since the epoch, ascending: one per point of every series. */
  times: number[];
  series: ChartSeries[];
  height?: number;
}

export function Chart({ title, times, series, height = 240 }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (element === null) {
      return;
    }
    const options: uPlot.Options = {
      width: Math.max(280, element.clientWidth),
      height,
      series: [{}, ...series.map((s, index) => ({ label: s.label, stroke: PALETTE[index % PALETTE.length] ?? "#000", width: 2 }))],
      axes: [{}, { size: 60 }],
      legend: { live: false },
    };
    const chart = new uPlot(options, [times, ...series.map((s) => s.values)], element);
    // Follow the page's width (narrow screens, a resized window) without a new chart.
    const resize = new ResizeObserver(() => {
      chart.setSize({ width: Math.max(280, element.clientWidth), height });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [times, series, height]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title}: chart; the same numbers are in the table below`} />
      <details>
        <summary>{title} as a table</summary>
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Time (UTC)</th>
                {series.map((s) => (
                  <th scope="col" key={s.label}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {times.map((time, row) =>
                series.some((s) => (s.values[row] ?? 0) !== 0) ? (
                  <tr key={time}>
                    <td>{new Date(time * 1000).toISOString().slice(0, 16).replace("T", " ")}</td>
                    {series.map((s) => (
                      <td key={s.label}>{(s.values[row] ?? 0).toLocaleString()}</td>
                    ))}
                  </tr>
                ) : null,
              )}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

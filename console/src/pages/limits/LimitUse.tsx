// The current use of limits (GetLimitUsage entries), drawn one way wherever it is read: the limits page's "Current
// use" (every limit over one key's calls, each named with its tier and scope) and the panel beside a key, a service
// account, a tenant or a model (the limits set there, under their tier's heading). Each limit is a UsageBar (used of
// the limit, or "usage unknown" with the limit), what is left and when it resets, and for a budget its soft
// threshold's state.
import { formatTime } from "../../components/format";
import { UsageBar } from "../../components/UsageBar";
import type { LimitUsage } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { METRIC_NAMES } from "./names";

const count = (value: bigint | number) => value.toLocaleString();

function LimitUse({ entry, label }: { entry: LimitUsage; label: string }) {
  const crossed = entry.softLimitCrossedTime;
  return (
    <>
      <UsageBar label={label} used={entry.used} total={entry.limit} format={count} />
      {entry.remaining !== undefined ? (
        <p class="hint">
          {count(entry.remaining)} left{entry.resetTime ? `, resets ${formatTime(entry.resetTime)}` : ""}.
        </p>
      ) : null}
      {entry.softLimit !== undefined ? (
        <p class={crossed ? "field-error" : "hint"}>
          {crossed
            ? `Soft budget of ${count(entry.softLimit)} crossed ${formatTime(crossed)}.`
            : `Soft budget of ${count(entry.softLimit)} not crossed this period.`}
        </p>
      ) : null}
    </>
  );
}

/** The limits' use, one list item each, named by `label` (the metric's name unless told); nothing when empty. */
export function LimitUseList({ usage, label = (entry) => METRIC_NAMES[entry.metric] }: {
  usage: LimitUsage[];
  label?: (entry: LimitUsage) => string;
}) {
  if (usage.length === 0) {
    return null;
  }
  return (
    <ul class="plain-list usage-list">
      {usage.map((entry) => (
        <li key={`${entry.tier}:${entry.scope?.kind ?? 0}:${entry.scope?.id ?? ""}:${entry.metric}`}>
          <LimitUse entry={entry} label={label(entry)} />
        </li>
      ))}
    </ul>
  );
}

/** Said once under limits whose use the management server cannot see (each gateway counts on its own). */
export function UnknownUseHint({ usage }: { usage: LimitUsage[] }) {
  return usage.some((u) => u.used === undefined) ? (
    <p class="hint">Current use is counted by each gateway on its own (no shared counter store), so it cannot be shown here.</p>
  ) : null;
}

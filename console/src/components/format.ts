// Dates as people read them, in their own locale and time zone.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

const FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function formatTime(time: Timestamp | undefined): string {
  return time === undefined ? "" : FORMAT.format(timestampDate(time));
}

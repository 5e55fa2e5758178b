"""/switchboard.usage.v1.UsageService/*: the console's usage aggregates."""

"""The web console served at /console: its static files (`static`) and its sign-in (`session`, `oidc`)."""

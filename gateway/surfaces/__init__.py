"""One module per /v1 surface; each exposes `routes(app)`-style handlers registered by `gateway.app`."""

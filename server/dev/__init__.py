"""Development only: the stand-in model upstream (`switchboard dev-models`) and the demo that `make run` seeds."""

"""The ASGI entry point pyvoy loads (`server.asgi:app`); configured entirely from the environment."""

from server.app import build_app
from server.settings import load_settings

app = build_app(load_settings())

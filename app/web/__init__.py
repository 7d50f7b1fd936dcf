"""The local web view of a home (`multiverse ui`): the runs, a run's tree and answers, its
deliverables, the catalog and instructions tables, in a browser.

It reads the files the CLI reads and writes answers through the CLI's own functions: there is
no second state, and no daemon needs to run for it. Starlette serves it, Jinja2 renders it, the
vendored htmx (static/htmx.min.js, 0BSD, static/htmx.LICENSE.txt) keeps its parts live; every
asset is served from this package.

- `create_app(home, token)`: the ASGI application, behind the token (`server`).
- `serve(home, host, port, token, ready)`: serve it until interrupted.
"""

from __future__ import annotations

from app.web.routes import create_app
from app.web.server import is_loopback, new_token, serve, url_of

__all__ = ["create_app", "is_loopback", "new_token", "serve", "url_of"]

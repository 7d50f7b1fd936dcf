"""The local web view of a home (`multiverse ui`): the runs, a run's tree and answers, its
deliverables, the catalog and instructions tables, in a browser.

It reads the files the CLI reads (through `views`) and writes answers through the same function
as each CLI command (`app.commands`, `orchestrator.forking`): there is no second state, and no
daemon needs to run for it. Starlette serves it, Jinja2 renders it, the vendored htmx
(static/htmx.min.js, 0BSD, static/htmx.LICENSE.txt) keeps its *live* fragments current: htmx
asks for one every two seconds with the version it has, and gets 204 while it is the same.

Serving: a socket bound as asked, the URL with its token, uvicorn until Ctrl-C. Who may use it:
the token on every request, CSRF-safe answers, strict headers. The URL `multiverse ui` prints
carries a random token; the first request with it sets a cookie (HttpOnly, SameSite=Strict) that
carries it on every later request, so a request without either gets 403. An answer (a POST) must
also name the token in its form and come from the page's own origin. Every response says that
only this server's own scripts may run.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import mimetypes
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from app.web.views import (
    STATUS_CHOICES,
    TABLES,
    is_run_id,
    output_file,
    outputs_base,
    read_text,
    render_markdown,
    run_page,
    runs_page,
    table_page,
)
from multiverse.errors import MultiverseError, RunStateError, UnknownRun, UserError
from multiverse.home import Home, probe
from multiverse.store import TableStore

COOKIE = "multiverse_ui"
FORM_FIELD = "csrf"
# Only the server's own scripts run: a script in a rendered asset or a model's text is inert.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# A file of the home shown as it is (an SVG chart, report.html): a sandbox, nothing runs.
FILE_POLICY = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # the token never leaves in a Referer
    (b"cache-control", b"no-store"),
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def same(given: str | None, token: str) -> bool:
    """Whether `given` is the token (in constant time)."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class Entry:
    """What a request carries that says who sent it."""

    query_token: str | None
    cookie_token: str | None

    @property
    def presented(self) -> str | None:
        """The token the request shows: the URL's, else the cookie's."""
        return self.query_token or self.cookie_token


def entry_of(scope: Scope) -> Entry:
    """The tokens of a request's URL and cookie."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    cookies: SimpleCookie = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                cookies.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no token
                continue
    morsel = cookies.get(COOKIE)
    return Entry(query.get("token", [None])[0], morsel.value if morsel else None)


def same_origin(origin: str | None, referer: str | None, host: str | None) -> bool:
    """Whether a POST comes from a page of this server (its Origin, else its Referer)."""
    if host is None:
        return False
    source = origin if origin not in (None, "") else referer
    if not source or source == "null":
        return False
    parts = urlsplit(source)
    return parts.scheme in ("http", "https") and parts.netloc == host


def answer_allowed(token: str, form_token: str | None, origin: str | None,
                   referer: str | None, host: str | None) -> bool:  # fmt: skip
    """Whether an answer may be written: the token in its form, and sent from this origin."""
    return same(form_token, token) and same_origin(origin, referer, host)


class Guard:
    """ASGI middleware: 403 without the token; the cookie set; the security headers added."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request without the token; pass the others on with strict headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry = entry_of(scope)
        if not same(entry.presented, self.token):
            await _forbidden(send)
            return
        set_cookie = entry.cookie_token is None or not same(entry.cookie_token, self.token)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in HEADERS if name not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", PAGE_POLICY.encode()))
                if set_cookie:
                    cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _forbidden(send: Send) -> None:
    body = (
        b"403: this page needs the token of the URL that `multiverse ui` printed "
        b"(open that URL again)\n"
    )
    await send({
        "type": "http.response.start",
        "status": 403,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()), *HEADERS],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def new_token() -> str:
    """A fresh random token for the URL (never stored: each `multiverse ui` has its own)."""
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.1, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int, token: str) -> str:
    """The URL to open: the host (bracketed if IPv6), the port and the token."""
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/?token={token}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(home: Home, host: str, port: int, token: str, ready: Callable[[str], None]) -> None:
    """Serve the home's web view until interrupted; `ready` is told its URL once it listens."""
    import uvicorn

    sock = bind(host, port)
    try:
        config = uvicorn.Config(
            create_app(home, token), log_level="warning", access_log=False, lifespan="off"
        )
        server = uvicorn.Server(config)
        ready(url_of(host, sock.getsockname()[1], token))
        server.run(sockets=[sock])
    finally:
        sock.close()


HERE = Path(__file__).parent
POLL = "every 2s"
SAID = {
    "CONFIRM": "Confirmed: the answer is written; the daemon plans the run.",
    "MODIFY": "Asked for a revised proposal: it appears here once the daemon made it.",
    "CANCEL": "Cancel asked: the daemon stops the run after the step in flight.",
    "PAUSE": "Pause asked: the run stops its step in flight and holds until resumed.",
    "RESUME": "Resume asked: the run goes on.",
    "RETRY": "Retry asked: the daemon resumes the run from its failed step.",
    "APPROVE": "Approved: the daemon goes on with the action.",
    "DENY": "Denied: the model is told the action was refused.",
    "FORK": "Forked: this is the new run.",
}


class Site:
    """The pages of one home, with the token its forms carry."""

    def __init__(self, home: Home, token: str) -> None:
        self.home = home
        self.token = token
        self.store = TableStore()
        self.jinja = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
        )

    def render(self, template: str, **context: Any) -> str:
        """A template with the context every page has."""
        serving = probe(self.home.state).serving
        return self.jinja.get_template(template).render(
            home=str(self.home.root), csrf=self.token, csrf_field=FORM_FIELD, serving=serving,
            statuses=STATUS_CHOICES, tables=TABLES, **context,
        )  # fmt: skip

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """A whole page."""
        return HTMLResponse(self.render(template, **context), status_code=status)

    def live(
        self, request: Request, element: str, url: str, template: str, **context: Any
    ) -> Response:
        """A live fragment: 204 when the client has this version, else it with its version."""
        inner = self.render(template, **context)
        version = hashlib.sha256(inner.encode()).hexdigest()[:16]
        if request.query_params.get("v") == version:
            return Response(status_code=204)
        return HTMLResponse(self.live_block(element, url, version, inner))

    def live_block(self, element: str, url: str, version: str, inner: str) -> str:
        """The element htmx polls: its content and the version it has."""
        return self.render("_live.html", element=element, url=url, version=version, inner=inner)

    def fragment(self, element: str, url: str, template: str, **context: Any) -> str:
        """A live fragment's first rendering, inside a whole page."""
        inner = self.render(template, **context)
        version = hashlib.sha256(inner.encode()).hexdigest()[:16]
        return self.live_block(element, url, version, inner)

    # -- the runs list -------------------------------------------------------------------

    def _runs(self, request: Request) -> tuple[Any, str]:
        query = request.query_params
        try:
            limit = int(query.get("limit", "50") or 50)
        except ValueError:
            limit = 50
        page = runs_page(self.home, query.getlist("status"), query.get("since", ""), limit,
                         query.get("archived") == "1")  # fmt: skip
        return page, "/fragments/runs" + (f"?{request.url.query}" if request.url.query else "")

    async def runs(self, request: Request) -> Response:
        """The runs, newest first, with the filters of `multiverse runs`."""
        page, url = self._runs(request)
        table = self.fragment("runs-live", url, "_runs_table.html", page=page)
        return self.page("runs.html", status=400 if page.error else 200, page=page, table=table)

    async def runs_fragment(self, request: Request) -> Response:
        """The runs table alone (polled)."""
        page, url = self._runs(request)
        return self.live(request, "runs-live", url, "_runs_table.html", page=page)

    # -- one run -------------------------------------------------------------------------

    def _run_id(self, request: Request) -> str:
        run_id = str(request.path_params["run_id"])
        if not is_run_id(run_id):
            raise UnknownRun(run_id)
        return run_id

    def _run_context(self, run_id: str) -> dict[str, Any]:
        run = run_page(self.home, self.store, run_id)
        return {"run": run}

    async def run(self, request: Request) -> Response:
        """A run's page: its tree, proposal and answers, approvals, messages, deliverables."""
        return self._run_response(request)

    def _run_response(self, request: Request, error: str | None = None,
                      status: int = 200, run_id: str | None = None) -> Response:  # fmt: skip
        try:
            run_id = run_id or self._run_id(request)
            context = self._run_context(run_id)
        except UnknownRun as unknown:
            return self.page("error.html", status=404, message=str(unknown))
        said = SAID.get(request.query_params.get("said", ""))
        base = f"/runs/{run_id}"
        progress = self.fragment("progress-live", f"{base}/progress", "_progress.html", **context)
        panel = self.fragment("panel-live", f"{base}/panel", "_panel.html", **context)
        return self.page("run.html", status=status, progress=progress, panel=panel, said=said,
                         error=error, **context)  # fmt: skip

    async def progress(self, request: Request) -> Response:
        """The run's status line and tree (polled)."""
        try:
            run_id = self._run_id(request)
            context = self._run_context(run_id)
        except UnknownRun:
            return Response(status_code=404)
        url = f"/runs/{run_id}/progress"
        return self.live(request, "progress-live", url, "_progress.html", **context)

    async def panel(self, request: Request) -> Response:
        """The run's proposal, answers, approvals, messages and deliverables (polled)."""
        try:
            run_id = self._run_id(request)
            context = self._run_context(run_id)
        except UnknownRun:
            return Response(status_code=404)
        return self.live(request, "panel-live", f"/runs/{run_id}/panel", "_panel.html", **context)

    async def _form(self, request: Request) -> dict[str, str] | None:
        """The answer's form, or None when it is not CSRF-safe (no token, another origin)."""
        form = await request.form()
        fields = {key: value for key, value in form.items() if isinstance(value, str)}
        headers = request.headers
        if not answer_allowed(self.token, fields.get(FORM_FIELD), headers.get("origin"),
                              headers.get("referer"), headers.get("host")):  # fmt: skip
            return None
        return fields

    async def answer(self, request: Request) -> Response:
        """Confirm, Modify, Cancel, Pause, Resume or Retry: as the CLI's commands write them."""
        from app import commands

        fields = await self._form(request)
        if fields is None:
            return _refused()
        kind = fields.get("kind", "")
        home = str(self.home.root)
        try:
            run_id = self._run_id(request)
            if kind in ("CONFIRM", "MODIFY"):
                commands.answer_run(home, run_id, kind, fields.get("text", ""))
            elif kind == "CANCEL":
                commands.cancel_run(home, run_id)
            elif kind == "PAUSE":
                commands.pause_run(home, run_id)
            elif kind == "RESUME":
                commands.resume_run(home, run_id)
            elif kind == "RETRY":
                commands.retry_run(home, run_id)
            else:
                raise UserError(f"{kind!r} is not an answer")
        except MultiverseError as error:
            return self._refusal(request, error)
        return _back(run_id, kind)

    async def approval(self, request: Request) -> Response:
        """Approve or Deny the action a run waits for (`multiverse approve/deny`)."""
        from app.commands import answer_approval

        fields = await self._form(request)
        if fields is None:
            return _refused()
        allow = fields.get("decision") == "APPROVE"
        try:
            run_id = self._run_id(request)
            answer_approval(str(self.home.root), run_id, fields.get("approval_id") or None, allow)
        except MultiverseError as error:
            return self._refusal(request, error)
        return _back(run_id, "APPROVE" if allow else "DENY")

    async def fork(self, request: Request) -> Response:
        """A new run from a final run (`multiverse fork RUN --from STEP`)."""
        from orchestrator.forking import fork_run

        fields = await self._form(request)
        if fields is None:
            return _refused()
        step = fields.get("step", "").strip() or None
        try:
            result = fork_run(self.home, self.store, self._run_id(request), step)
        except MultiverseError as error:
            return self._refusal(request, error)
        return _back(result.run_id, "FORK")

    def _refusal(self, request: Request, error: MultiverseError) -> Response:
        """The run's page again, saying why the answer was refused."""
        if isinstance(error, UnknownRun):
            return self.page("error.html", status=404, message=str(error))
        status = 409 if isinstance(error, RunStateError) else 400
        return self._run_response(request, error=str(error), status=status)

    # -- files and tables ----------------------------------------------------------------

    async def output(self, request: Request) -> Response:
        """A deliverable: markdown rendered in the page (charts inline), any other file as it
        is, in a sandbox where nothing runs; only files of outputs/<run_id>/ are served."""
        run_id, name = str(request.path_params["run_id"]), str(request.path_params["name"])
        path = output_file(self.home, run_id, name)
        if path is None:
            return self.page("error.html", status=404, message=f"no such deliverable: {name}")
        if path.suffix.lower() == ".md" and request.query_params.get("raw") != "1":
            text = read_text(path) or ""
            base = outputs_base(run_id) + "/" + quote(str(Path(name).parent.as_posix()))
            body = render_markdown(text, base.removesuffix("/."))
            return self.page("document.html", run_id=run_id, name=name, body=body)
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if kind.startswith("text/") and kind != "text/html":
            kind = "text/plain"  # shown as text, never interpreted
        headers = {"content-security-policy": FILE_POLICY}
        return FileResponse(path, media_type=kind, headers=headers)

    async def table(self, request: Request) -> Response:
        """The catalog or the instructions table, sortable by any column."""
        name = str(request.path_params["name"])
        if name not in TABLES:
            return self.page("error.html", status=404, message=f"no table {name!r}")
        return self.page("table.html", table=table_page(self.home, self.store, name))


def _back(run_id: str, kind: str) -> Response:
    """After an answer: the run's page, saying what was done (a GET: reloading repeats nothing)."""
    return RedirectResponse(f"/runs/{run_id}?said={kind}", status_code=303)


def _refused() -> Response:
    return Response(
        "403: an answer needs the page's form token and must come from this page\n",
        status_code=403,
        media_type="text/plain",
    )


def create_app(home: Home, token: str) -> Guard:
    """The web view of a home, behind its token."""
    site = Site(home, token)
    routes = [
        Route("/", site.runs),
        Route("/fragments/runs", site.runs_fragment),
        Route("/runs/{run_id}", site.run),
        Route("/runs/{run_id}/progress", site.progress),
        Route("/runs/{run_id}/panel", site.panel),
        Route("/runs/{run_id}/answer", site.answer, methods=["POST"]),
        Route("/runs/{run_id}/approval", site.approval, methods=["POST"]),
        Route("/runs/{run_id}/fork", site.fork, methods=["POST"]),
        Route("/runs/{run_id}/outputs/{name:path}", site.output),
        Route("/tables/{name}", site.table),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Guard(Starlette(routes=routes), token)


__all__ = ["create_app", "is_loopback", "new_token", "serve", "url_of"]

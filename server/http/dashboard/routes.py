"""The dashboard's HTTP side: routes beside /mcp, who may see what, CSRF, and rendering.

Every request passes the same checks before any page code runs: the Host header (DNS
rebinding: another site's name pointing at 127.0.0.1 must not read the pages), the session
(see server.http.dashboard.access), the project grant (403 outside it), and for a POST the CSRF
token and write permission. Pages are rendered by Jinja2 with autoescaping on, and sent with
a Content-Security-Policy that allows nothing but this server's own stylesheet.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

import structlog
from jinja2 import Environment, PackageLoader
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from memory_core.domain.inputs import MAX_IDS
from memory_core.domain.models import Layer, SearchMode, Tier
from memory_core.errors import InvalidInputError, MemoryNotFoundError
from memory_core.services.truth import TruthService
from server.app_context import AppContext, LiveContext
from server.http.dashboard import curation, pages
from server.http.dashboard.access import COOKIE, SESSION_SECONDS, DashboardAccess, Visitor
from server.http.throttle import AuthThrottle, peer

__all__ = ["Dashboard"]

log = structlog.get_logger(__name__)

_HEADERS = {
    # Nothing but this server's stylesheet and inline SVG: no script runs, no frame embeds it.
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    # same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on a form
    # POST, which the Origin check below must refuse.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


class _Refusal(Exception):
    """Stop handling a request and send this response instead."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _project_url(project: str, *parts: str | int) -> str:
    tail = "".join(f"/{quote(str(p), safe='')}" for p in parts)
    return f"/p/{quote(project, safe='')}{tail}"


def _enum(value: str | None, kind: Any, field: str) -> Any:
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(v.value for v in kind)
        raise InvalidInputError(field, f"must be one of {allowed}") from None


def _int(value: str | None, field: str) -> int | None:
    if not value:
        return None
    # Ids are SQL bigints: a larger number would fail in the driver, not name the field.
    if not value.isdigit() or len(value) > 19 or int(value) >= 2**63:
        raise InvalidInputError(field, "must be a whole number below 2^63")
    return int(value)


def _memory_path(request: Request) -> tuple[str, int]:
    """The project and memory id of a /p/{project}/memories/{memory_id} path."""
    memory_id = _int(request.path_params["memory_id"], "memory_id")
    if memory_id is None:
        raise InvalidInputError("memory_id", "must be a whole number")
    return request.path_params["project"], memory_id


def _mark(at: str | None, memory_id: int | None) -> tuple[datetime, int] | None:
    """The keyset mark of a prune preview page: the previous page's last time and id."""
    if memory_id is None:
        return None
    try:
        when = datetime.fromisoformat(at or "")
    except ValueError:
        raise InvalidInputError("at", "must be an ISO 8601 time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC), memory_id


def _done(code: str | None) -> str | None:
    """The confirmation a redirect after a change asks to show (codes, not text from the URL)."""
    kind, _, number = (code or "").partition("-")
    if not number.isdigit():
        return None
    if kind == "forgot":
        return f"Forgot memory {number}."
    if kind == "pruned":
        return f"Deleted {number} expired memories."
    if kind == "pinned":
        return f"Pinned memory {number}: it never expires and is never pruned."
    if kind == "unpinned":
        return f"Unpinned memory {number}: it ages like the others again."
    return None


class Dashboard:
    """The dashboard's routes over the running server's services."""

    def __init__(
        self,
        live: LiveContext,
        access: DashboardAccess,
        security: TransportSecuritySettings,
        default_project: str,
        throttle: AuthThrottle | None = None,
    ) -> None:
        self.live = live
        self.access = access
        self.security = security
        self.default_project = default_project
        # Shared with the HTTP guard (server.http.app): a sign-in form failure and a wrong
        # bearer token on /mcp count against the same client address.
        self.throttle = throttle or AuthThrottle()
        self.templates = Environment(
            loader=PackageLoader("server.http.dashboard", "templates"),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.globals.update(project_url=_project_url, Tier=Tier, Layer=Layer)
        self.css = (
            resources.files("server.http.dashboard").joinpath("static/dashboard.css").read_bytes()
        )

    def routes(self) -> list[BaseRoute]:
        """The routes to mount beside /mcp."""
        page = self._endpoint
        return [
            Route("/", page(self.projects)),
            Route("/static/dashboard.css", self.stylesheet),
            Route("/login", page(self.login, anonymous=True), methods=["GET", "POST"]),
            Route("/logout", page(self.logout, anonymous=True), methods=["POST"]),
            Route("/p/{project}", page(self.overview)),
            Route("/p/{project}/memories", page(self.memories)),
            Route("/p/{project}/memories/{memory_id}", page(self.detail)),
            Route(
                "/p/{project}/memories/{memory_id}/forget",
                page(self.forget, write=True),
                methods=["POST"],
            ),
            Route(
                "/p/{project}/memories/{memory_id}/pin",
                page(self.pin, write=True),
                methods=["POST"],
            ),
            Route("/p/{project}/forgetting", page(self.forgetting)),
            Route("/p/{project}/forgetting/where", page(self.forget_where)),
            Route(
                "/p/{project}/forgetting/where/run",
                page(self.forget_where_run, write=True),
                methods=["POST"],
            ),
            Route("/p/{project}/forgetting/prune", page(self.prune, write=True), methods=["POST"]),
            Route("/p/{project}/conversations", page(self.conversations)),
        ]

    # -- the checks every page passes ----------------------------------------------------

    def _host_allowed(self, request: Request) -> bool:
        if not self.security.enable_dns_rebinding_protection:
            return True
        host = request.headers.get("host", "")
        if not any(fnmatch.fnmatchcase(host, p) for p in self.security.allowed_hosts):
            return False
        origin = request.headers.get("origin")
        return origin is None or any(
            fnmatch.fnmatchcase(origin, p) for p in self.security.allowed_origins
        )

    def _visitor(self, request: Request) -> tuple[Visitor, bool]:
        """The request's session, and whether it is new (and needs its cookie set).

        Raises:
            _Refusal: A bearer token was sent and matches no grant (401; the HTTP guard has
                counted the failure against the client's address).
        """
        header = request.headers.get("authorization", "")
        existing = self.access.read(request.cookies.get(COOKIE))
        if header[:7].lower() == "bearer " and not self.access.open:
            bearer = self.access.from_bearer(header[7:], existing.csrf if existing else None)
            if bearer is None:
                # A script with a wrong token learns so, rather than being sent to a form.
                refused = self._render(
                    request,
                    self.access.new_session(),
                    "error.html",
                    401,
                    message="That token is not valid.",
                )
                refused.headers["www-authenticate"] = "Bearer"
                raise _Refusal(refused)
            # No cookie for a script: a bearer header stands alone on each request.
            return bearer, False
        if existing is not None:
            return existing, False
        return self.access.new_session(), True

    def _endpoint(
        self,
        handler: Callable[[Request, Visitor], Awaitable[Response]],
        *,
        write: bool = False,
        anonymous: bool = False,
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not self._host_allowed(request):
                log.warning("dashboard.host_refused", host=request.headers.get("host"))
                return Response("Host not allowed", status_code=421, headers=_HEADERS)
            try:
                visitor, fresh = self._visitor(request)
            except _Refusal as refusal:
                for name, value in _HEADERS.items():
                    refusal.response.headers.setdefault(name, value)
                return refusal.response
            try:
                response = await self._checked(request, visitor, handler, write, anonymous)
            except _Refusal as refusal:
                response = refusal.response
            except MemoryNotFoundError:
                response = self._render(
                    request, visitor, "error.html", 404, message="No such memory."
                )
            except InvalidInputError as exc:
                message = f"{exc.field}: {exc.reason}"
                response = self._render(request, visitor, "error.html", 400, message=message)
            for name, value in _HEADERS.items():
                response.headers.setdefault(name, value)
            if fresh and "set-cookie" not in response.headers:
                self._set_cookie(request, response, visitor)
            return response

        return endpoint

    async def _checked(
        self,
        request: Request,
        visitor: Visitor,
        handler: Callable[[Request, Visitor], Awaitable[Response]],
        write: bool,
        anonymous: bool,
    ) -> Response:
        if request.method == "POST":
            form = await request.form()
            presented = form.get("csrf")
            if not self.access.csrf_matches(
                visitor, presented if isinstance(presented, str) else None
            ):
                log.warning("dashboard.csrf_refused", client=visitor.name, path=request.url.path)
                return self._render(
                    request,
                    visitor,
                    "error.html",
                    403,
                    message="This form has expired or did not come from this dashboard. "
                    "Reload the page and try again.",
                )
        if not anonymous and not visitor.signed_in:
            if request.method == "GET":
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)
            return self._render(request, visitor, "error.html", 401, message="Sign in first.")
        project = request.path_params.get("project")
        if project is not None and not visitor.may_see(project):
            log.warning("dashboard.project_refused", client=visitor.name, project=project)
            return self._render(
                request,
                visitor,
                "error.html",
                403,
                message=f"This token may not see project {project!r}.",
            )
        if write and not visitor.may_change:
            log.warning("dashboard.write_refused", client=visitor.name, path=request.url.path)
            return self._render(
                request, visitor, "error.html", 403, message="This token is read-only."
            )
        return await handler(request, visitor)

    def _set_cookie(self, request: Request, response: Response, visitor: Visitor) -> None:
        response.set_cookie(
            COOKIE,
            self.access.cookie(visitor),
            max_age=SESSION_SECONDS,
            path="/",
            httponly=True,
            samesite="strict",
            # Over HTTPS (directly, or behind a proxy whose X-Forwarded-Proto uvicorn trusts)
            # the cookie never travels in clear; plain-HTTP localhost needs it without.
            secure=request.url.scheme == "https",
        )

    def _app(self) -> AppContext:
        if self.live.current is None:
            raise _Refusal(Response("The server is starting or stopping.", status_code=503))
        return self.live.current

    def _render(
        self, request: Request, visitor: Visitor, name: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = template.render(
            visitor=visitor,
            open_access=self.access.open,
            path=request.url.path,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    # -- pages ---------------------------------------------------------------------------

    async def stylesheet(self, request: Request) -> Response:
        """The dashboard's own CSS (the only resource its pages load)."""
        return Response(
            self.css,
            media_type="text/css",
            headers={"cache-control": "max-age=3600", "x-content-type-options": "nosniff"},
        )

    async def login(self, request: Request, visitor: Visitor) -> Response:
        """The sign-in form, and signing in with a token (POST)."""
        target = request.query_params.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"  # only this server's own pages: no open redirect
        if self.access.open:
            return RedirectResponse(target, status_code=303)
        if request.method == "GET":
            return self._render(request, visitor, "login.html", next=target)
        client = peer(request.scope)
        wait_s = self.throttle.wait_s(client)
        if wait_s:
            # Not logged per attempt (the hold was logged when it began).
            throttled = self._render(
                request,
                visitor,
                "login.html",
                429,
                next=target,
                error=f"Too many failed sign-ins. Try again in {wait_s} s.",
            )
            throttled.headers["retry-after"] = str(wait_s)
            return throttled
        form = await request.form()
        token = form.get("token")
        signed = self.access.sign_in(token) if isinstance(token, str) and token else None
        if signed is None:
            log.warning("dashboard.sign_in_refused", client_address=client)
            self.throttle.failed(client)
            return self._render(
                request, visitor, "login.html", 401, next=target, error="That token is not valid."
            )
        # A success clears no failure (server.http.throttle says why).
        log.info("dashboard.signed_in", client=signed.name)
        response = RedirectResponse(target, status_code=303)
        self._set_cookie(request, response, signed)
        return response

    async def logout(self, request: Request, visitor: Visitor) -> Response:
        """End the session (a new anonymous one replaces it)."""
        response = RedirectResponse("/login" if not self.access.open else "/", status_code=303)
        self._set_cookie(request, response, self.access.new_session())
        return response

    async def projects(self, request: Request, visitor: Visitor) -> Response:
        """The projects this visitor may see."""
        known = set(await self._app().container.repo.projects())
        if visitor.projects is not None:
            known |= set(visitor.projects)
        else:
            known.add(self.default_project)
        shown = sorted(p for p in known if visitor.may_see(p))
        return self._render(request, visitor, "projects.html", projects=shown)

    async def overview(self, request: Request, visitor: Visitor) -> Response:
        """Counts by tier and layer, the ageing chart, schedule and health of a project."""
        project = request.path_params["project"]
        data = await pages.overview_page(self._app(), project)
        return self._render(
            request, visitor, "overview.html", project=project, page=data, section="overview"
        )

    async def memories(self, request: Request, visitor: Visitor) -> Response:
        """Browse (filters) or search (signals) a project's memories."""
        project = request.path_params["project"]
        q = request.query_params
        text = (q.get("q") or "").strip() or None
        filters = {
            "q": text or "",
            "mode": q.get("mode") or SearchMode.HYBRID.value,
            "layer": q.get("layer") or "",
            "tier": q.get("tier") or "",
            "session": q.get("session") or "",
            "tags": (q.get("tags") or "").strip(),
        }
        data = await pages.browse_page(
            self._app(),
            project,
            text=text,
            mode=_enum(filters["mode"], SearchMode, "mode"),
            layer=_enum(filters["layer"], Layer, "layer"),
            tier=_enum(filters["tier"], Tier, "tier"),
            session_id=filters["session"] or None,
            before_id=_int(q.get("before"), "before"),
            tags=curation.tag_list(filters["tags"]),
        )
        more = None
        if data.next_before is not None:
            more = "?" + urlencode(
                {**{k: v for k, v in filters.items() if v}, "before": data.next_before}
            )
        return self._render(
            request,
            visitor,
            "memories.html",
            project=project,
            page=data,
            filters=filters,
            more=more,
            modes=list(SearchMode),
            search_shown=pages.SEARCH_SHOWN,
            done=_done(q.get("done")),
            section="memories",
        )

    async def detail(self, request: Request, visitor: Visitor) -> Response:
        """One memory with its metadata, use, neighbours, pin, history and supersession."""
        project, memory_id = _memory_path(request)
        data = await pages.detail_page(self._app(), project, memory_id)
        return self._render(
            request,
            visitor,
            "memory.html",
            project=project,
            page=data,
            done=_done(request.query_params.get("done")),
            section="memories",
        )

    async def pin(self, request: Request, visitor: Visitor) -> Response:
        """Pin or unpin one memory (the `pin` / `unpin` tools' service call)."""
        project, memory_id = _memory_path(request)
        form = await request.form()
        wanted = form.get("pinned")
        if wanted not in ("true", "false"):
            raise InvalidInputError("pinned", "must be true or false")
        on = wanted == "true"
        await TruthService(self._app().container.memories).pin(project, [memory_id], pinned=on)
        log.info("dashboard.pinned", client=visitor.name, memory_id=memory_id, pinned=on)
        done = f"{'pinned' if on else 'unpinned'}-{memory_id}"
        target = _project_url(project, "memories", memory_id) + f"?done={done}"
        return RedirectResponse(target, status_code=303)

    async def forget(self, request: Request, visitor: Visitor) -> Response:
        """Delete one memory (the `forget` tool's service call)."""
        project, memory_id = _memory_path(request)
        await self._app().container.memories.forget(project, memory_id)
        log.info("dashboard.forgot", client=visitor.name, project=project, memory_id=memory_id)
        target = _project_url(project, "memories") + f"?done=forgot-{memory_id}"
        return RedirectResponse(target, status_code=303)

    async def forgetting(self, request: Request, visitor: Visitor) -> Response:
        """What pruning would delete now, a page at a time, with the button to run it."""
        project = request.path_params["project"]
        q = request.query_params
        after = _mark(q.get("at"), _int(q.get("after"), "after"))
        data = await pages.forgetting_page(self._app(), project, after)
        more = None
        if data.next_after is not None:
            at, memory_id = data.next_after
            more = "?" + urlencode({"at": at.isoformat(), "after": memory_id})
        return self._render(
            request,
            visitor,
            "forgetting.html",
            project=project,
            page=data,
            paged=after is not None,
            more=more,
            counted_up_to=pages.PRUNE_COUNTED,
            done=_done(q.get("done")),
            section="forgetting",
        )

    async def prune(self, request: Request, visitor: Visitor) -> Response:
        """Run the prune the forgetting page previewed."""
        project = request.path_params["project"]
        deleted = await pages.run_prune(self._app(), project)
        log.info("dashboard.pruned", client=visitor.name, project=project, deleted=len(deleted))
        target = _project_url(project, "forgetting") + f"?done=pruned-{len(deleted)}"
        return RedirectResponse(target, status_code=303)

    async def forget_where(self, request: Request, visitor: Visitor) -> Response:
        """The filtered forget's form and, once a filter is given, its dry run."""
        project = request.path_params["project"]
        chosen = curation.forget_filter(project, request.query_params)
        preview = await curation.forget_preview(self._app(), chosen) if chosen.given else None
        return self._forget_page(request, visitor, chosen, preview=preview)

    def _forget_page(
        self, request: Request, visitor: Visitor, chosen: curation.ForgetFilter, **parts: Any
    ) -> Response:
        """The filtered forget's page: the form and a preview, or a receipt (`parts`)."""
        return self._render(
            request,
            visitor,
            "forget_where.html",
            project=request.path_params["project"],
            chosen=chosen,
            max_ids=MAX_IDS,
            section="forgetting",
            **{"preview": None, "receipt": None, **parts},
        )

    async def forget_where_run(self, request: Request, visitor: Visitor) -> Response:
        """Delete what the preview showed (and still matches); the page is the receipt.

        Not a redirect: the receipt (what left from every place) is the answer itself.
        """
        project = request.path_params["project"]
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        chosen = curation.forget_filter(project, fields)
        if not chosen.given:
            raise InvalidInputError("filter", "is required (a whole project is `clear`)")
        receipt = await curation.forget_run(self._app(), chosen, fields.get("ids", ""))
        log.info("dashboard.forgot_where", client=visitor.name, project=project, rows=receipt.rows)
        previewed = len([p for p in fields.get("ids", "").split(",") if p.strip()])
        return self._forget_page(request, visitor, chosen, receipt=receipt, previewed=previewed)

    async def conversations(self, request: Request, visitor: Visitor) -> Response:
        """Sessions, their summaries and their tool-result caches."""
        project = request.path_params["project"]
        data = await pages.conversations_page(self._app(), project)
        return self._render(
            request,
            visitor,
            "conversations.html",
            project=project,
            page=data,
            section="conversations",
        )

"""ASGI middleware (Starlette, FastAPI, Django's ASGI handler, any ASGI 3 app)."""

import asyncio
import logging
import urllib.parse

from .verify import Verifier, candidates

log = logging.getLogger("anteroom_connector")


class AnteroomASGI:
    """Wraps app: an HTTP request or WebSocket with an admission token of
    config's sale that verifies (the admission cookie first, then an
    Authorization bearer) reaches app with scope["anteroom"] (an Admission)
    and scope["anteroom_user"], in a copy of the scope. An HTTP request
    with none valid is redirected (302, no-store) to the sale's waiting
    page, returning to its path when that is a path on this site; a
    WebSocket is closed (1008). When the keys cannot be had and none cached
    fits, it answers 503 (a WebSocket: closed 1013) and logs why: nothing
    passes unverified. Other scopes (lifespan) pass through. Verification,
    which may fetch the keys, runs in a worker thread."""

    def __init__(self, app, config, verifier=None):
        self.app = app
        self.config = config
        self.verifier = verifier or Verifier(config)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {}
        for k, v in scope.get("headers", []):
            name = k.decode("latin-1").lower()
            if name in ("cookie", "authorization"):
                headers.setdefault(name, []).append(v.decode("latin-1"))
        raws = candidates("; ".join(headers.get("cookie", [])), (headers.get("authorization") or [""])[0],
                          self.config.event)
        adm, unavailable = (None, None)
        if raws:
            adm, unavailable = await asyncio.to_thread(self.verifier.check, raws)
        if adm is not None:
            return await self.app(dict(scope, anteroom=adm, anteroom_user=adm.user), receive, send)
        if unavailable is not None:
            log.error("anteroom: failing closed: %s", unavailable)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1013 if unavailable else 1008})
        if unavailable is not None:
            status, hdrs, body = 503, [(b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", b"5")], \
                b"admission cannot be checked now\n"
        else:
            status, body = 302, b""
            hdrs = [(b"location", self.config.waiting_page(request_uri(scope)).encode("latin-1"))]
        hdrs += [(b"cache-control", b"no-store"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": body})


def request_uri(scope):
    """The request's path and query: raw_path when the server gives it."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else urllib.parse.quote(scope.get("root_path", "") + scope.get("path", ""),
                                                                safe="/:@!$&'()*+,;=-._~")
    qs = scope.get("query_string", b"")
    return path + ("?" + qs.decode("latin-1") if qs else "")

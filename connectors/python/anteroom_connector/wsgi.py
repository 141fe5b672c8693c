"""WSGI middleware (Flask, Django, any WSGI app)."""

import logging
import urllib.parse

from .verify import Verifier, candidates

log = logging.getLogger("anteroom_connector")

#: The environ keys an admitted request carries.
ADMISSION_KEY, USER_KEY = "anteroom.admission", "anteroom.user"


class AnteroomWSGI:
    """Wraps app: a request with an admission token of config's sale that
    verifies (the admission cookie first, then an Authorization bearer)
    reaches app with environ["anteroom.admission"] (an Admission) and
    environ["anteroom.user"]. One with none, or none valid, is redirected
    (302, no-store) to the sale's waiting page, returning to its path when
    that is a path on this site. When the keys cannot be had and none
    cached fits, it answers 503 and logs why: nothing passes unverified."""

    def __init__(self, app, config, verifier=None):
        self.app = app
        self.config = config
        self.verifier = verifier or Verifier(config)

    def __call__(self, environ, start_response):
        raws = candidates(environ.get("HTTP_COOKIE"), environ.get("HTTP_AUTHORIZATION"), self.config.event)
        adm, unavailable = self.verifier.check(raws)
        if adm is not None:
            environ[ADMISSION_KEY], environ[USER_KEY] = adm, adm.user
            return self.app(environ, start_response)
        if unavailable is not None:
            log.error("anteroom: failing closed: %s", unavailable)
            start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"),
                                                       ("Cache-Control", "no-store"), ("Retry-After", "5")])
            return [b"admission cannot be checked now\n"]
        start_response("302 Found", [("Location", self.config.waiting_page(request_uri(environ))),
                                     ("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store"),
                                     ("Content-Length", "0")])
        return [b""]


def request_uri(environ):
    """The request's path and query as the client sent them, as far as the
    server tells: REQUEST_URI or RAW_URI when set, else rebuilt."""
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI")
    if raw:
        return raw
    path = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).encode("latin-1").decode("utf-8", "replace")
    uri = urllib.parse.quote(path, safe="/:@!$&'()*+,;=-._~") or "/"
    if environ.get("QUERY_STRING"):
        uri += "?" + environ["QUERY_STRING"]
    return uri

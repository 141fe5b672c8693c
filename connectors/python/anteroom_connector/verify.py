"""Offline verification of anteroom admission tokens, and what the
middleware shares: the cookie's name, the safe return rule, the waiting
page's address."""

import re
import time
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timezone

import jwt

from .keys import Keys, KeysUnavailable

#: Where a node publishes its keys (web.JWKSPath).
JWKS_PATH = "/.well-known/jwks.json"

_EVENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_MAX_RETURN = 2048
_MAX_TOKEN = 8192


class InvalidAdmission(Exception):
    """A token to refuse: forged, expired, not yet valid, another iss, aud
    or event, another algorithm, an unknown key, malformed."""


@dataclass(frozen=True)
class Admission:
    """What a verified admission token says: user (its sub) may be on the
    shop for event until expires_at; id is its jti."""

    user: str
    event: str
    expires_at: datetime
    id: str = ""


def admission_cookie(event):
    """The cookie that holds the admission token of event, as the node sets
    it (shopper.AdmissionCookie)."""
    return "anteroom_a_" + event


def safe_return(p):
    """Whether p may be the waiting page's return address: a path on this
    site ("/..."), never another site ("//host", "/\\host", "https://..."),
    without control characters (shopper.SafeReturn)."""
    if not isinstance(p, str) or not p or len(p) > _MAX_RETURN or p[0] != "/" or p.startswith("//") or "\\" in p:
        return False
    return not any(ord(c) < 0x20 or ord(c) == 0x7F for c in p)


class Config:
    """The middleware's settings.

    room_url: the node's public base URL, e.g. https://queue.shop.example.
    Required. event: the sale's id; tokens of other sales are refused.
    Required. jwks_url: default room_url + JWKS_PATH. issuer: the iss
    required (ANTEROOM_ISSUER), default "anteroom". audience: the aud
    required (ANTEROOM_AUDIENCE), default "anteroom-claim". leeway: seconds
    of clock skew tolerated on exp, nbf and iat, default 5. refresh: how
    long fetched keys are used, default 300 s. min_refetch: least time
    between two fetches (an unknown kid fetches at once), default 5 s.
    timeout: a fetch's limit, default 10 s."""

    def __init__(self, room_url, event, jwks_url=None, issuer="anteroom", audience="anteroom-claim",
                 leeway=5.0, refresh=300.0, min_refetch=5.0, timeout=10.0):
        if not isinstance(room_url, str) or not re.match(r"^https?://[^/]+", room_url):
            raise ValueError("anteroom: room_url must be the node's http(s) URL")
        if not isinstance(event, str) or not _EVENT_ID.match(event):
            raise ValueError("anteroom: event must be the sale's id")
        self.room_url = room_url.rstrip("/")
        self.event = event
        self.jwks_url = jwks_url or self.room_url + JWKS_PATH
        if not re.match(r"^https?://", self.jwks_url):
            raise ValueError("anteroom: jwks_url must be an http(s) URL")
        self.issuer, self.audience = issuer, audience
        self.leeway = max(0.0, float(leeway))
        self.refresh, self.min_refetch, self.timeout = float(refresh), float(min_refetch), float(timeout)

    def waiting_page(self, ret):
        """The sale's waiting page, returning to ret when it is safe."""
        page = f"{self.room_url}/e/{self.event}"
        if safe_return(ret):
            page += "?return=" + urllib.parse.quote(ret, safe="")
        return page


class Verifier:
    """Checks admission tokens of one sale offline with the node's keys, as
    the node does: the Ed25519 signature, alg EdDSA only, a kid of the key
    set, iss, aud, exp, nbf and iat with leeway, the event, a sub. Safe for
    threads."""

    def __init__(self, config, clock=time.monotonic):
        self.config = config
        self.keys = Keys(config.jwks_url, config.refresh, config.min_refetch, config.timeout, clock)

    def verify(self, raw):
        """The Admission raw carries; InvalidAdmission for a token to
        refuse; KeysUnavailable when no key can be had (fail closed)."""
        cfg = self.config
        if not isinstance(raw, str) or not raw or len(raw) > _MAX_TOKEN:
            raise InvalidAdmission("no token")
        try:
            header = jwt.get_unverified_header(raw)
        except jwt.PyJWTError as err:
            raise InvalidAdmission(str(err)) from err
        if header.get("alg") != "EdDSA":  # never none, never HS256 keyed with the public key
            raise InvalidAdmission(f"signing method {header.get('alg')!r} is invalid")
        if "crit" in header:
            raise InvalidAdmission("crit header not supported")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidAdmission("no kid")
        key = self.keys.get(kid)
        if key is None:
            raise InvalidAdmission(f"unknown kid {kid!r}")
        try:
            claims = jwt.decode(raw, key, algorithms=["EdDSA"], audience=cfg.audience, issuer=cfg.issuer,
                                leeway=cfg.leeway, options={"require": ["exp", "nbf", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError as err:
            raise InvalidAdmission(str(err)) from err
        if claims["iat"] > time.time() + cfg.leeway:  # PyJWT 2.6 checks only that it is a number
            raise InvalidAdmission("token used before issued")
        if claims.get("event") != cfg.event:
            raise InvalidAdmission("another event's token")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise InvalidAdmission("no user")
        jti = claims.get("jti")
        return Admission(user=sub, event=cfg.event, expires_at=datetime.fromtimestamp(claims["exp"], timezone.utc),
                         id=jti if isinstance(jti, str) else "")

    def check(self, raws):
        """The Admission of the first of raws that verifies, or None with
        the KeysUnavailable that kept one from being checked, if any."""
        unavailable = None
        for raw in raws:
            try:
                return self.verify(raw), None
            except InvalidAdmission:
                continue
            except KeysUnavailable as err:
                unavailable = err
        return None, unavailable


def candidates(cookie_header, authorization, event):
    """The request's tokens: the admission cookie's, then the bearer's."""
    out = []
    name = admission_cookie(event)
    for part in (cookie_header or "").split(";"):
        k, eq, v = part.partition("=")
        if eq and k.strip() == name:
            if v.strip():
                out.append(v.strip())
            break
    auth = authorization or ""
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        out.append(auth[7:].strip())
    return out

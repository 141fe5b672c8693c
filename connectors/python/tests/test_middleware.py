"""The WSGI and ASGI middleware against a real anteroom node. Run by go
test ./connectors (TestPythonMiddleware), which starts the node, admits
users through real joins, and passes their tokens and the node's URL in
the environment; CONTROL_URL rotates the node's signing keys on request."""

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import socket
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from anteroom_connector import JWKS_PATH, AnteroomASGI, AnteroomWSGI, Config, Verifier, safe_return


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError(f"{name} is not set: run these tests through go test ./connectors")
    return v


ROOM, EVENT = env("ANTEROOM_URL"), env("ANTEROOM_EVENT")
ISSUER, AUDIENCE = env("ANTEROOM_ISSUER"), env("ANTEROOM_AUDIENCE")
GENUINE, USER, CONTROL = env("TOKEN_GENUINE"), env("TOKEN_USER"), env("CONTROL_URL")
KID = jwt.get_unverified_header(GENUINE)["kid"]


class JWKSProxy:
    """A proxy in front of the node's JWKS that counts fetches and can be down."""

    def __init__(self):
        proxy = self
        self.hits, self.down = 0, False

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                proxy.hits += 1
                if proxy.down:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with urllib.request.urlopen(ROOM + JWKS_PATH, timeout=5) as up:
                    body = up.read()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{JWKS_PATH}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def b64(v):
    raw = v if isinstance(v, bytes) else json.dumps(v).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def hs256(secret):
    signing = f"{b64({'alg': 'HS256', 'kid': KID, 'typ': 'JWT'})}.{GENUINE.split('.')[1]}"
    return f"{signing}.{b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())}"


def pem(x):
    """The SPKI PEM of the raw Ed25519 public key x."""
    der = bytes.fromhex("302a300506032b6570032100") + x
    return b"-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(der) + b"\n-----END PUBLIC KEY-----\n"


def closed_port_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}{JWKS_PATH}"


def cookie(tok):
    return {"HTTP_COOKIE": f"other=1; anteroom_a_{EVENT}={tok}"}


def bearer(tok):
    return {"HTTP_AUTHORIZATION": f"Bearer {tok}"}


class Shop:
    """A WSGI and an ASGI app behind the middleware of one Config and one
    Verifier (one key cache); seen records who reached them."""

    def __init__(self, clock=time.monotonic, **kw):
        self.config = Config(ROOM, EVENT, issuer=ISSUER, audience=AUDIENCE, **kw)
        self.verifier = Verifier(self.config, clock=clock)
        self.seen = []

        def wsgi_app(environ, start_response):
            self.seen.append(environ["anteroom.user"])
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [f"shop as {environ['anteroom.user']}".encode()]

        async def asgi_app(scope, receive, send):
            self.seen.append(scope["anteroom_user"])
            body = f"shop as {scope['anteroom'].user}".encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})

        self.wsgi = validator(AnteroomWSGI(validator(wsgi_app), self.config, self.verifier))
        self.asgi = AnteroomASGI(asgi_app, self.config, self.verifier)

    def get_wsgi(self, path="/drop/item", query="", **headers):
        environ = {"SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query, **headers}
        setup_testing_defaults(environ)
        got = {}

        def start_response(status, hdrs, exc_info=None):
            got["status"], got["headers"] = int(status.split()[0]), dict(hdrs)

        it = self.wsgi(environ, start_response)
        body = b"".join(it)
        it.close()
        return got["status"], got["headers"], body.decode()

    def get_asgi(self, path="/drop/item", query="", **headers):
        hdrs = [(k[5:].lower().encode(), v.encode()) for k, v in headers.items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
                 "headers": hdrs, "client": ("127.0.0.1", 1234), "server": ("127.0.0.1", 80)}
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(msg):
            sent.append(msg)

        asyncio.run(self.asgi(scope, receive, send))
        start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
        return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body.decode()

    def both(self, **kw):
        """The WSGI and the ASGI answers to one request."""
        return {"wsgi": self.get_wsgi(**kw), "asgi": self.get_asgi(**kw)}


class Middleware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.jwks = JWKSProxy()
        cls.shop = Shop(jwks_url=cls.jwks.url, min_refetch=1)

    @classmethod
    def tearDownClass(cls):
        cls.jwks.close()

    def test_00_settings_are_checked(self):
        for bad in [dict(room_url="", event=EVENT), dict(room_url=ROOM, event="../x"),
                    dict(room_url=ROOM, event=EVENT, jwks_url="file:///etc/passwd")]:
            with self.assertRaises(ValueError, msg=bad):
                Config(**bad)

    def test_01_safe_return(self):
        for ok in ["/", "/drop/item?a=1"]:
            self.assertTrue(safe_return(ok), ok)
        for bad in ["", "//evil.example/", "/\\evil.example", "https://evil.example/", "drop", "/a\nb", "/" + "a" * 2048]:
            self.assertFalse(safe_return(bad), bad)

    def test_02_genuine_passes_as_its_user_keys_fetched_once(self):
        before = self.jwks.hits
        for h in [cookie(GENUINE), bearer(GENUINE), cookie(GENUINE)]:
            for kind, (status, _, body) in self.shop.both(**h).items():
                self.assertEqual((status, body), (200, f"shop as {USER}"), kind)
        self.assertEqual(self.jwks.hits - before, 1, "six admitted requests fetch the key set once")
        # A bad cookie does not hide a good bearer (the gate's order).
        for kind, (status, _, _) in self.shop.both(**cookie("junk"), **bearer(GENUINE)).items():
            self.assertEqual(status, 200, kind)

    def test_03_no_token_redirects_with_a_safe_return(self):
        for kind, (status, h, _) in self.shop.both(path="/drop/item", query="a=1&b=2").items():
            self.assertEqual(status, 302, kind)
            self.assertEqual(h["Location" if kind == "wsgi" else "location"],
                             f"{ROOM}/e/{EVENT}?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2", kind)
            self.assertEqual(h["Cache-Control" if kind == "wsgi" else "cache-control"], "no-store", kind)
        for kind, (status, h, _) in self.shop.both(path="//evil.example/x").items():
            self.assertEqual((status, h["Location" if kind == "wsgi" else "location"]), (302, f"{ROOM}/e/{EVENT}"),
                             f"{kind}: another site is never a return address")

    def test_04_forged_expired_other_event_alg_none_HS256_with_the_public_key_redirect(self):
        with urllib.request.urlopen(ROOM + JWKS_PATH) as resp:
            jwk = next(k for k in json.load(resp)["keys"] if k["kid"] == KID)
        claims = jwt.decode(GENUINE, options={"verify_signature": False})
        other = Ed25519PrivateKey.generate()
        h64, p64, s64 = GENUINE.split(".")
        x = base64.urlsafe_b64decode(jwk["x"] + "==")
        bad = {
            "forged signature": jwt.encode(claims, other, algorithm="EdDSA", headers={"kid": KID}),
            "tampered claims": f"{h64}.{b64(dict(claims, sub='mallory'))}.{s64}",
            "signed by the key it embeds (jwk header)": jwt.encode(claims, other, algorithm="EdDSA", headers={
                "kid": KID, "jwk": json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(other.public_key()))}),
            "expired": env("TOKEN_EXPIRED"),
            "another event's": env("TOKEN_OTHER_EVENT"),
            "another audience's": env("TOKEN_OTHER_AUDIENCE"),
            "alg none": f"{b64({'alg': 'none', 'kid': KID, 'typ': 'JWT'})}.{p64}.",
            "alg none, no kid": f"{b64({'alg': 'none'})}.{p64}.",
            "HS256 keyed with the public key's bytes": hs256(x),
            "HS256 keyed with its x": hs256(jwk["x"].encode()),
            "HS256 keyed with its JWK": hs256(json.dumps(jwk).encode()),
            "HS256 keyed with its PEM": hs256(pem(x)),
            "no kid": jwt.encode(claims, other, algorithm="EdDSA"),
            "not a JWT": "a.b.c",
        }
        before = list(self.shop.seen)
        for what, tok in bad.items():
            for h in [cookie(tok), bearer(tok)]:
                for kind, (status, hdrs, _) in self.shop.both(**h).items():
                    self.assertEqual(status, 302, f"{kind}: {what}")
        self.assertEqual(self.shop.seen, before, "no refused token reached the shop")

    def test_05_unknown_kids_refetch_at_a_bounded_pace(self):
        other = Ed25519PrivateKey.generate()
        claims = jwt.decode(GENUINE, options={"verify_signature": False})
        time.sleep(1.1)  # past the last fetch's min_refetch
        before, t0 = self.jwks.hits, time.monotonic()
        for i in range(20):
            tok = jwt.encode(claims, other, algorithm="EdDSA", headers={"kid": f"made-up-{i}"})
            self.assertEqual(self.shop.get_wsgi(**bearer(tok))[0], 302)
        most = 1 + int(time.monotonic() - t0)
        got = self.jwks.hits - before
        self.assertTrue(1 <= got <= most, f"20 unknown kids fetched {got} times, want 1..{most}")

    def test_06_key_rotation_is_picked_up(self):
        req = urllib.request.Request(CONTROL + "/rotate", method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            rot = json.load(resp)
        self.assertNotEqual(jwt.get_unverified_header(rot["token"])["kid"], KID, "the node signs with a new key")
        deadline = time.monotonic() + 10
        while True:
            got = self.shop.both(**cookie(rot["token"]))
            if all(s == 200 for s, _, _ in got.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for kind, (status, _, body) in got.items():
            self.assertEqual((status, body), (200, f"shop as {rot['user']}"), kind)
        self.assertEqual(self.shop.get_wsgi(**cookie(GENUINE))[0], 200, "the old key's tokens still pass")

    def test_07_jwks_down_while_fresh_cache_serves(self):
        self.jwks.down = True
        try:
            for kind, (status, _, _) in self.shop.both(**cookie(GENUINE)).items():
                self.assertEqual(status, 200, kind)
        finally:
            self.jwks.down = False

    def test_08_jwks_unreachable_no_cached_key_fails_closed(self):
        for url in [closed_port_url(), self.jwks.url]:
            self.jwks.down = url == self.jwks.url
            try:
                shop = Shop(jwks_url=url)
                with self.assertLogs("anteroom_connector", logging.ERROR) as logs:
                    got = shop.both(**cookie(GENUINE))
                for kind, (status, hdrs, _) in got.items():
                    self.assertEqual(status, 503, f"{kind} with {url}")
                self.assertEqual(shop.seen, [])
                self.assertIn("failing closed: anteroom: admission keys from http", "\n".join(logs.output))
                for kind, (status, _, _) in shop.both().items():
                    self.assertEqual(status, 302, f"{kind}: no token needs no key")
            finally:
                self.jwks.down = False

    def test_09_stale_keys_that_cannot_be_renewed_fail_closed(self):
        clock = [time.monotonic()]
        shop = Shop(jwks_url=self.jwks.url, refresh=60, clock=lambda: clock[0])
        self.assertEqual(shop.get_wsgi(**cookie(GENUINE))[0], 200)
        self.jwks.down = True
        try:
            clock[0] += 61
            with self.assertLogs("anteroom_connector", logging.ERROR):
                self.assertEqual(shop.get_asgi(**cookie(GENUINE))[0], 503)
        finally:
            self.jwks.down = False
        clock[0] += 6  # past min_refetch: renewed
        self.assertEqual(shop.get_wsgi(**cookie(GENUINE))[0], 200)

    def test_10_websocket_without_admission_is_closed(self):
        sent = []

        async def send(msg):
            sent.append(msg)

        async def receive():
            return {"type": "websocket.connect"}

        scope = {"type": "websocket", "path": "/drop/ws", "headers": [], "query_string": b""}
        asyncio.run(self.shop.asgi(scope, receive, send))
        self.assertEqual(sent, [{"type": "websocket.close", "code": 1008}])


if __name__ == "__main__":
    unittest.main()

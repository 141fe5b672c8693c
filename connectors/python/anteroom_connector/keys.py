"""The admission keys: the node's JWKS, fetched and cached as the Go
client.Verifier does it (client/verifier.go is the reference)."""

import json
import threading
import time
import urllib.request

import jwt


class KeysUnavailable(Exception):
    """A verification that failed closed: the key set could not be fetched
    or read, and no cached key fits. No token is accepted without keys; the
    middleware answers 503 rather than send an admitted visitor back to the
    room."""

    def __init__(self, url, cause):
        super().__init__(f"anteroom: admission keys from {url}: {cause}")
        self.url = url
        self.cause = cause


class Keys:
    """The JWKS at url, fetched on first use and cached for refresh
    seconds. A kid not in the cache fetches it again (a rotation), at most
    once per min_refetch seconds, so tokens of made-up kids cannot make it
    hammer the node. When the set cannot be fetched and none is cached, or
    the cached one is older than refresh and cannot be renewed, get raises
    KeysUnavailable. Safe for threads: a fetch runs for one caller while
    the others wait for it. Only Ed25519 (OKP) keys are kept."""

    def __init__(self, url, refresh=300.0, min_refetch=5.0, timeout=10.0, clock=time.monotonic):
        self.url = url
        self.refresh = refresh
        self.min_refetch = min_refetch
        self.timeout = timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._keys = None  # kid -> Ed25519PublicKey
        self._fetched_at = 0.0
        self._tried_at = None
        self._last_err = None

    def get(self, kid):
        """The public key of kid, None when the key set has none (refuse
        the token), or KeysUnavailable."""
        with self._lock:
            now = self.clock()
            fresh = self._keys is not None and now - self._fetched_at < self.refresh
            if fresh and kid in self._keys:
                return self._keys[kid]
            if self._tried_at is not None and now - self._tried_at < self.min_refetch:
                if fresh:  # an unknown kid again, too soon: the cache answers
                    return None
                if self._last_err is not None:
                    raise KeysUnavailable(self.url, self._last_err)
            try:
                self._fetch_locked(now)
            except KeysUnavailable:
                if fresh:
                    return None  # the cached set still stands
                raise
            return self._keys.get(kid)

    def _fetch_locked(self, now):
        try:
            req = urllib.request.Request(self.url, headers={"Accept": "application/json"})
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                if resp.status != 200:
                    raise ValueError(f"status {resp.status}")
                body = resp.read((1 << 20) + 1)
            if len(body) > 1 << 20:
                raise ValueError("key set over 1 MiB")
            keys = {}
            for jwk in json.loads(body).get("keys", []):
                if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
                    continue
                if jwk.get("alg", "EdDSA") != "EdDSA" or jwk.get("use", "sig") != "sig":
                    continue
                kid, x = jwk.get("kid"), jwk.get("x")
                if not isinstance(kid, str) or not isinstance(x, str):
                    continue
                keys[kid] = jwt.PyJWK({"kty": "OKP", "crv": "Ed25519", "x": x}, algorithm="EdDSA").key
            if not keys:
                raise ValueError("no Ed25519 key in the set")
        except Exception as err:  # any failure to get keys fails closed
            self._tried_at, self._last_err = now, err
            raise KeysUnavailable(self.url, err) from err
        self._keys, self._fetched_at, self._tried_at, self._last_err = keys, now, now, None

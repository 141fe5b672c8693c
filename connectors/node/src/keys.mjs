// The admission keys: the node's JWKS, fetched and cached as the Go
// client.Verifier does it (client/verifier.go is the reference).
import { importJWK } from "jose";

/** KeysUnavailable is a verification that failed closed: the key set could
 * not be fetched or read, and no cached key fits. No token is accepted
 * without keys; the middleware answers 503 rather than send an admitted
 * visitor back to the room. */
export class KeysUnavailable extends Error {
  /** @param {string} url @param {unknown} cause */
  constructor(url, cause) {
    super(`anteroom: admission keys from ${url}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "KeysUnavailable";
  }
}

/** Keys fetches the JWKS at url on first use and caches it for refreshMs.
 * A kid not in the cache fetches it again (a rotation), at most once per
 * minRefetchMs, so tokens of made-up kids cannot make it hammer the node.
 * When the set cannot be fetched and none is cached, or the cached one is
 * older than refreshMs and cannot be renewed, get throws KeysUnavailable.
 * Concurrent callers share one fetch. Only Ed25519 (OKP) keys are kept. */
export class Keys {
  /** @param {{url: string, refreshMs: number, minRefetchMs: number, timeoutMs: number, now: () => number, fetch: typeof fetch}} o */
  constructor(o) {
    this.o = o;
    /** @type {Map<string, CryptoKey> | null} */
    this.keys = null;
    this.fetchedAt = 0;
    this.triedAt = 0;
    /** @type {unknown} */
    this.lastErr = null;
    /** @type {Promise<void> | null} */
    this.inflight = null;
  }

  /** get returns the key of kid to verify with, undefined when the key
   * set has none (the token is refused), or throws KeysUnavailable.
   * @param {string} kid */
  async get(kid) {
    const now = this.o.now();
    const fresh = this.keys !== null && now - this.fetchedAt < this.o.refreshMs;
    if (fresh && this.keys.has(kid)) return this.keys.get(kid);
    if (this.triedAt !== 0 && now - this.triedAt < this.o.minRefetchMs) {
      // An unknown kid again, too soon: the cache answers.
      if (fresh) return undefined;
      if (this.lastErr !== null) throw new KeysUnavailable(this.o.url, this.lastErr);
    }
    try {
      await this.refresh();
    } catch (err) {
      if (fresh) return undefined; // the cached set still stands
      throw err;
    }
    return this.keys?.get(kid);
  }

  /** refresh fetches the key set now; concurrent callers share the fetch. */
  refresh() {
    this.inflight ??= this.fetchKeys().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  async fetchKeys() {
    const now = this.o.now();
    try {
      const resp = await this.o.fetch(this.o.url, {
        headers: { accept: "application/json" },
        redirect: "error",
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      if (resp.status !== 200) throw new Error(`status ${resp.status}`);
      const text = await resp.text();
      if (text.length > 1 << 20) throw new Error("key set over 1 MiB");
      const set = JSON.parse(text);
      if (!set || !Array.isArray(set.keys)) throw new Error("no keys array");
      const keys = new Map();
      for (const jwk of set.keys) {
        if (jwk?.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.kid !== "string" || typeof jwk.x !== "string") continue;
        if (jwk.alg !== undefined && jwk.alg !== "EdDSA") continue;
        if (jwk.use !== undefined && jwk.use !== "sig") continue;
        keys.set(jwk.kid, await importJWK({ kty: "OKP", crv: "Ed25519", x: jwk.x }, "EdDSA"));
      }
      if (keys.size === 0) throw new Error("no Ed25519 key in the set");
      this.keys = keys;
      this.fetchedAt = now;
      this.triedAt = now;
      this.lastErr = null;
    } catch (err) {
      this.triedAt = now;
      this.lastErr = err;
      throw new KeysUnavailable(this.o.url, err);
    }
  }
}

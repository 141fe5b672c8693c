// @ts-check
// anteroom's JWKS, cached in the isolate: fetched again when old or for an
// unknown kid (a key rotation), rate-limited, and dropped when it cannot
// be refreshed for too long (the caller then fails closed).

/** @typedef {import("./settings.js").Settings} Settings */

/** How long one JWKS fetch may take. */
const FETCH_TIMEOUT_MS = 5000;

/**
 * The keys of one JWKS URL, and what became of the last fetch. One copy
 * per isolate: every request the isolate serves shares it.
 *
 * @typedef {object} KeyCache
 * @property {string} url
 * @property {Map<string, CryptoKey>} keys Ed25519 public keys by kid
 * @property {number} fetchedAt ms; 0 = never fetched successfully
 * @property {number} attemptAt ms of the last fetch started; 0 = none
 * @property {boolean} fetching a fetch is under way
 * @property {string} error why the last fetch failed; "" = it did not
 */

/** @type {KeyCache | null} */
let cache = null;

/**
 * keysFor returns the keys to check a token with kid against, fetching the
 * JWKS when the cache is older than cfg.cacheMs or lacks kid (a rotation) —
 * at most once every cfg.refetchMs, one fetch at a time. It returns null
 * when it has no keys it may trust: never fetched, or not refreshed for
 * cfg.maxStaleMs; or when kid is unknown and the last fetch failed (a
 * rotation it cannot see). The caller then fails closed.
 *
 * @param {string} kid
 * @param {Settings} cfg
 * @param {number} now ms
 * @returns {Promise<Map<string, CryptoKey> | null>}
 */
export async function keysFor(kid, cfg, now) {
  if (!cache || cache.url !== cfg.jwksURL) {
    cache = { url: cfg.jwksURL, keys: new Map(), fetchedAt: 0, attemptAt: 0, fetching: false, error: "" };
  }
  const c = cache;
  const stale = c.fetchedAt === 0 || now - c.fetchedAt >= cfg.cacheMs || !c.keys.has(kid);
  if (stale) {
    if (c.fetching && now - c.attemptAt < FETCH_TIMEOUT_MS) {
      await waitForFetch(c); // another request is fetching: use its answer
    } else if (c.attemptAt === 0 || now - c.attemptAt >= cfg.refetchMs) {
      await refresh(c, cfg);
    }
  }
  if (c.fetchedAt !== 0 && Date.now() - c.fetchedAt >= cfg.maxStaleMs) {
    console.error(`anteroom gate: the JWKS ${cfg.jwksURL} could not be fetched for ${cfg.maxStaleMs / 1000} s ` +
      `(${c.error || "not tried"}); dropped its keys: admitted visitors get 503 (fail closed)`);
    c.keys = new Map();
    c.fetchedAt = 0;
  }
  if (c.fetchedAt === 0) {
    return null;
  }
  if (!c.keys.has(kid) && c.error) {
    return null;
  }
  return c.keys;
}

/**
 * reachable reports whether anteroom answers: whether the last JWKS fetch
 * succeeded, fetching again first when the last attempt is older than
 * cfg.refetchMs (so at most one fetch every cfg.refetchMs, however many
 * visitors ask). The Worker asks it only while a fail-open deadline is
 * ahead, for visitors without a valid token: when anteroom cannot answer,
 * its waiting room cannot either.
 *
 * @param {Settings} cfg
 * @param {number} now ms
 * @returns {Promise<boolean>}
 */
export async function reachable(cfg, now) {
  if (!cache || cache.url !== cfg.jwksURL) {
    cache = { url: cfg.jwksURL, keys: new Map(), fetchedAt: 0, attemptAt: 0, fetching: false, error: "" };
  }
  const c = cache;
  if (c.fetching && now - c.attemptAt < FETCH_TIMEOUT_MS) {
    await waitForFetch(c);
  } else if (c.attemptAt === 0 || now - c.attemptAt >= cfg.refetchMs) {
    await refresh(c, cfg);
  }
  return c.fetchedAt !== 0 && c.error === "";
}

/**
 * waitForFetch waits for the fetch another request started, polling the
 * shared cache (a request must not await another request's promise in
 * workerd).
 *
 * @param {KeyCache} c
 */
async function waitForFetch(c) {
  const until = c.attemptAt + FETCH_TIMEOUT_MS + 100;
  while (c.fetching && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * refresh fetches the JWKS into c, keeping the keys it had when the fetch
 * fails, and logs why it failed.
 *
 * @param {KeyCache} c
 * @param {Settings} cfg
 */
async function refresh(c, cfg) {
  c.fetching = true;
  c.attemptAt = Date.now();
  try {
    const r = await fetch(cfg.jwksURL, {
      headers: { Accept: "application/json" },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (!r.ok) {
      throw new Error(`HTTP ${r.status}`);
    }
    const keys = await importKeys(await r.json());
    if (keys.size === 0) {
      throw new Error("no Ed25519 signing key in it");
    }
    c.keys = keys;
    c.fetchedAt = Date.now();
    c.error = "";
  } catch (e) {
    c.error = e instanceof Error ? e.message : String(e);
    const age = c.fetchedAt === 0 ? Infinity : Date.now() - c.fetchedAt;
    const then = age < cfg.maxStaleMs
      ? `still using the keys fetched ${Math.round(age / 1000)} s ago (until they are ${cfg.maxStaleMs / 1000} s old)`
      : "no keys to trust: admitted visitors get 503 (fail closed)";
    console.error(`anteroom gate: cannot fetch the JWKS ${cfg.jwksURL}: ${c.error}; ${then}`);
  } finally {
    c.fetching = false;
  }
}

/**
 * importKeys imports the Ed25519 signing keys of a JWKS by kid.
 *
 * @param {unknown} jwks
 * @returns {Promise<Map<string, CryptoKey>>}
 */
async function importKeys(jwks) {
  /** @type {Map<string, CryptoKey>} */
  const out = new Map();
  const list = jwks && typeof jwks === "object" && "keys" in jwks && Array.isArray(jwks.keys) ? jwks.keys : [];
  for (const k of list) {
    if (!k || k.kty !== "OKP" || k.crv !== "Ed25519" || typeof k.kid !== "string" || typeof k.x !== "string" ||
      (k.use !== undefined && k.use !== "sig")) {
      continue;
    }
    try {
      out.set(k.kid, await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: k.x }, "Ed25519", false, ["verify"]));
    } catch {
      // not a usable key: left out
    }
  }
  return out;
}

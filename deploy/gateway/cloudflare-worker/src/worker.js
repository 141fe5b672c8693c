// @ts-check
// anteroom's gate as a Cloudflare Worker, on the shop's own host.
//
// - The waiting room's paths (/e/, /events/, /assets/ and the JWKS) are
//   passed to anteroom, so the admission cookie the room sets is a cookie
//   of the shop's site.
// - Every other request the Worker's routes send it is a protected shop
//   URL: a visitor with a valid admission token of EVENT (the cookie
//   anteroom_a_<EVENT>, or an Authorization bearer) goes on to the origin
//   with USER_HEADER = the token's sub, whatever the client sent in that
//   header; anyone else is redirected to the waiting room, which sends them
//   back to the URL they asked for once admitted.
// - Tokens are verified offline with WebCrypto Ed25519 against anteroom's
//   JWKS, cached in the isolate and fetched again for an unknown kid (a key
//   rotation) at most every JWKS_REFETCH_SECONDS. Without keys it can
//   trust, it fails closed: admitted visitors get 503 and the log says why.
//
// deploy/gateway/cloudflare-worker/README.md explains the settings;
// internal/node TestCloudflareWorker runs this file in miniflare (workerd)
// against a real anteroom node.

/**
 * The Worker's settings: [vars] in wrangler.toml. Numbers may be given as
 * strings.
 *
 * @typedef {object} Env
 * @property {string} ANTEROOM_URL base URL of the anteroom nodes (the room, its API and the JWKS)
 * @property {string} EVENT the sale whose admission the Worker's routes require
 * @property {string} ISSUER admission tokens' iss (= ANTEROOM_ISSUER)
 * @property {string} AUDIENCE admission tokens' aud (= ANTEROOM_AUDIENCE)
 * @property {string} [JWKS_URL] default: ANTEROOM_URL + /.well-known/jwks.json
 * @property {string} [USER_HEADER] header the origin reads the user from; default X-User-ID
 * @property {string} [ORIGIN] base URL of the shop; default: the request's own URL (the zone's origin)
 * @property {string | number} [JWKS_CACHE_SECONDS] keys are fetched again after this long; default 300
 * @property {string | number} [JWKS_REFETCH_SECONDS] at most one JWKS fetch this often; default 10
 * @property {string | number} [JWKS_MAX_STALE_SECONDS] keys not refreshed for this long are dropped (fail closed); default 900
 */

/** Clock skew tolerated on exp, nbf and iat, as anteroom's own check. */
const LEEWAY_SECONDS = 5;
/** Longer tokens are refused before parsing, as anteroom does. */
const MAX_TOKEN_LEN = 4096;
/** How long one JWKS fetch may take. */
const FETCH_TIMEOUT_MS = 5000;
/** Paths served by anteroom, on the shop's host. */
const ROOM_PATHS = /^\/(e|events|assets)\//;
const JWKS_PATH = "/.well-known/jwks.json";
/** Event ids anteroom accepts. */
const EVENT_ID = /^[a-z0-9-]{1,64}$/;

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

export default {
  /**
   * @param {Request} request
   * @param {Env} env
   * @returns {Promise<Response>}
   */
  async fetch(request, env) {
    const cfg = settings(env);
    if (typeof cfg === "string") {
      console.error(`anteroom gate: misconfigured (${cfg}); refusing every request (fail closed)`);
      return closed();
    }
    const url = new URL(request.url);
    if (ROOM_PATHS.test(url.pathname) || url.pathname === JWKS_PATH) {
      return toAnteroom(request, url, cfg);
    }
    const tokens = admissionTokens(request, cfg.event);
    let unavailable = false;
    for (const token of tokens) {
      const v = await verifyAdmission(token, cfg, Date.now());
      if ("user" in v) {
        return toOrigin(request, url, cfg, v.user);
      }
      unavailable ||= v.unavailable;
    }
    if (unavailable) {
      return closed(); // a token it cannot check: neither in nor to the room
    }
    return waitingRoom(url, cfg.event);
  },
};

/**
 * @typedef {object} Settings
 * @property {string} anteroom ANTEROOM_URL without a trailing slash
 * @property {string} event
 * @property {string} issuer
 * @property {string} audience
 * @property {string} jwksURL
 * @property {string} userHeader
 * @property {string} origin "" = the request's own URL
 * @property {number} cacheMs
 * @property {number} refetchMs
 * @property {number} maxStaleMs
 */

/**
 * settings reads env, or says what is wrong with it.
 *
 * @param {Env} env
 * @returns {Settings | string}
 */
function settings(env) {
  for (const name of /** @type {const} */ (["ANTEROOM_URL", "EVENT", "ISSUER", "AUDIENCE"])) {
    if (typeof env[name] !== "string" || env[name] === "") {
      return `${name} is not set`;
    }
  }
  if (!EVENT_ID.test(env.EVENT)) {
    return `EVENT ${JSON.stringify(env.EVENT)} is not an event id`;
  }
  /** @type {(name: "JWKS_CACHE_SECONDS" | "JWKS_REFETCH_SECONDS" | "JWKS_MAX_STALE_SECONDS", def: number) => number} */
  const seconds = (name, def) => {
    const v = env[name];
    const n = v === undefined || v === "" ? def : Number(v);
    return Number.isFinite(n) && n > 0 ? n * 1000 : NaN;
  };
  const cacheMs = seconds("JWKS_CACHE_SECONDS", 300);
  const refetchMs = seconds("JWKS_REFETCH_SECONDS", 10);
  const maxStaleMs = seconds("JWKS_MAX_STALE_SECONDS", 900);
  if (Number.isNaN(cacheMs) || Number.isNaN(refetchMs) || Number.isNaN(maxStaleMs)) {
    return "JWKS_CACHE_SECONDS, JWKS_REFETCH_SECONDS and JWKS_MAX_STALE_SECONDS must be positive numbers";
  }
  if (maxStaleMs < cacheMs) {
    return "JWKS_MAX_STALE_SECONDS is shorter than JWKS_CACHE_SECONDS";
  }
  const anteroom = env.ANTEROOM_URL.replace(/\/+$/, "");
  return {
    anteroom,
    event: env.EVENT,
    issuer: env.ISSUER,
    audience: env.AUDIENCE,
    jwksURL: env.JWKS_URL || anteroom + JWKS_PATH,
    userHeader: env.USER_HEADER || "X-User-ID",
    origin: (env.ORIGIN || "").replace(/\/+$/, ""),
    cacheMs,
    refetchMs,
    maxStaleMs,
  };
}

/**
 * toAnteroom passes a request for the waiting room, its API or the JWKS to
 * anteroom. The user header is dropped (anteroom must not take the
 * client's word for who it is) and X-Forwarded-* describe the visitor.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 */
function toAnteroom(request, url, cfg) {
  const headers = new Headers(request.headers);
  headers.delete(cfg.userHeader);
  const ip = request.headers.get("CF-Connecting-IP");
  if (ip) {
    headers.set("X-Forwarded-For", ip);
  } else {
    headers.delete("X-Forwarded-For");
  }
  headers.set("X-Forwarded-Proto", url.protocol.replace(":", ""));
  headers.set("X-Forwarded-Host", url.host);
  return pass(cfg.anteroom + url.pathname + url.search, request, headers, "anteroom");
}

/**
 * toOrigin passes an admitted visitor's request to the shop with the user
 * header set to user, overwriting whatever the client sent.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 * @param {string} user
 */
function toOrigin(request, url, cfg, user) {
  const headers = new Headers(request.headers);
  headers.set(cfg.userHeader, user);
  const target = cfg.origin ? cfg.origin + url.pathname + url.search : request.url;
  return pass(target, request, headers, "the origin");
}

/**
 * pass sends request on to target with headers, and its answer back as it
 * is (redirects included); 502 when target cannot be reached.
 *
 * @param {string} target
 * @param {Request} request
 * @param {Headers} headers
 * @param {string} what for the log
 * @returns {Promise<Response>}
 */
async function pass(target, request, headers, what) {
  try {
    return await fetch(target, { method: request.method, headers, body: request.body, redirect: "manual" });
  } catch (e) {
    console.error(`anteroom gate: cannot reach ${what} (${new URL(target).origin}): ${e instanceof Error ? e.message : e}`);
    return new Response("Bad gateway.\n", {
      status: 502,
      headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" },
    });
  }
}

/**
 * waitingRoom redirects to event's waiting page, which brings the visitor
 * back to the URL asked for once admitted: the redirect anteroom's own gate
 * names (X-Anteroom-Redirect). It is relative, so it stays on the host the
 * browser asked.
 *
 * @param {URL} url
 * @param {string} event
 */
function waitingRoom(url, event) {
  let page = "/e/" + event;
  const ret = url.pathname + url.search;
  if (safeReturn(ret)) {
    page += "?return=" + encodeURIComponent(ret);
  }
  return new Response(null, { status: 302, headers: { Location: page, "Cache-Control": "no-store" } });
}

/**
 * safeReturn is anteroom's rule for a return address (web/shopper
 * SafeReturn): a path on this site, never another site, no control
 * characters.
 *
 * @param {string} p
 */
function safeReturn(p) {
  return p.length > 0 && p.length <= 2048 && p[0] === "/" && !p.startsWith("//") && !p.includes("\\") &&
    !/[\u0000-\u001f\u007f]/.test(p);
}

/** closed is the fail-closed answer: nobody passes, and nobody loops. */
function closed() {
  return new Response("The waiting room cannot check admissions right now. Please try again in a minute.\n", {
    status: 503,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "Retry-After": "30" },
  });
}

/**
 * admissionTokens returns the admission tokens a request carries: the
 * cookies anteroom_a_<event> (several when paths shadow each other), then
 * an Authorization bearer (apps).
 *
 * @param {Request} request
 * @param {string} event
 * @returns {string[]}
 */
function admissionTokens(request, event) {
  const name = "anteroom_a_" + event + "=";
  /** @type {string[]} */
  const out = [];
  for (const c of (request.headers.get("Cookie") || "").split(";")) {
    const kv = c.trim();
    if (kv.startsWith(name) && kv.length > name.length) {
      out.push(kv.slice(name.length));
    }
  }
  const m = /^bearer\s+(\S+)\s*$/i.exec(request.headers.get("Authorization") || "");
  if (m) {
    out.push(m[1]);
  }
  return out.slice(0, 4);
}

/**
 * A verdict on one token: the user it admits, or a refusal; unavailable
 * when the Worker had no keys it could trust to decide.
 *
 * @typedef {{user: string} | {unavailable: boolean}} Verdict
 */

const REFUSED = { unavailable: false };
const UNAVAILABLE = { unavailable: true };

/**
 * verifyAdmission checks token as anteroom does (tokens.Issuer.Verify):
 * EdDSA only (never the token's choice), no crit, a kid of the JWKS, the
 * Ed25519 signature, iss, aud, exp, nbf and iat with 5 s of leeway, the
 * event, and a non-empty sub, which it returns.
 *
 * @param {string} token
 * @param {Settings} cfg
 * @param {number} now ms
 * @returns {Promise<Verdict>}
 */
export async function verifyAdmission(token, cfg, now) {
  if (token.length > MAX_TOKEN_LEN) {
    return REFUSED;
  }
  const parts = token.split(".");
  if (parts.length !== 3) {
    return REFUSED;
  }
  const [h64, p64, s64] = /** @type {[string, string, string]} */ (parts);
  const head = jsonOf(h64);
  if (!head || head.alg !== "EdDSA" || "crit" in head || typeof head.kid !== "string") {
    return REFUSED;
  }
  const keys = await keysFor(head.kid, cfg, now);
  if (!keys) {
    return UNAVAILABLE;
  }
  const key = keys.get(head.kid);
  if (!key) {
    return REFUSED;
  }
  const sig = b64url(s64);
  if (!sig || sig.length !== 64) {
    return REFUSED;
  }
  const signed = new TextEncoder().encode(h64 + "." + p64);
  if (!(await crypto.subtle.verify("Ed25519", key, sig, signed))) {
    return REFUSED;
  }
  const c = jsonOf(p64);
  if (!c) {
    return REFUSED;
  }
  const t = now / 1000;
  const aud = Array.isArray(c.aud) ? c.aud : [c.aud];
  const ok = c.iss === cfg.issuer && aud.includes(cfg.audience) && c.event === cfg.event &&
    typeof c.exp === "number" && t <= c.exp + LEEWAY_SECONDS &&
    typeof c.nbf === "number" && t >= c.nbf - LEEWAY_SECONDS &&
    (c.iat === undefined || (typeof c.iat === "number" && t >= c.iat - LEEWAY_SECONDS)) &&
    typeof c.sub === "string" && c.sub !== "";
  return ok ? { user: /** @type {string} */ (c.sub) } : REFUSED;
}

/**
 * b64url decodes strict, unpadded base64url, or returns null.
 *
 * @param {string} s
 * @returns {Uint8Array | null}
 */
function b64url(s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) {
    return null;
  }
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) {
    out[i] = bin.charCodeAt(i);
  }
  return out;
}

/**
 * jsonOf decodes a base64url JSON object, or returns null.
 *
 * @param {string} s
 * @returns {Record<string, unknown> | null}
 */
function jsonOf(s) {
  const raw = b64url(s);
  if (!raw) {
    return null;
  }
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(raw));
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

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
async function keysFor(kid, cfg, now) {
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

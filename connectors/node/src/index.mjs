// @anteroom/express: Express/Connect middleware that lets a request through
// only with a valid anteroom admission token, verified offline with the
// node's published keys (JWKS). See README.md.
import { jwtVerify, errors } from "jose";
import { Keys, KeysUnavailable } from "./keys.mjs";

export { KeysUnavailable };

/** JWKS_PATH is where a node publishes its keys (web.JWKSPath). */
export const JWKS_PATH = "/.well-known/jwks.json";

/** admissionCookie names the cookie that holds the admission token of
 * event ev, as the node sets it (shopper.AdmissionCookie).
 * @param {string} ev */
export const admissionCookie = (ev) => `anteroom_a_${ev}`;

const MAX_RETURN = 2048;

/** safeReturn reports whether p may be the waiting page's return address:
 * a path on this site ("/..."), never another site ("//host", "/\host",
 * "https://..."), without control characters (shopper.SafeReturn).
 * @param {string} p */
export function safeReturn(p) {
  if (typeof p !== "string" || p.length === 0 || p.length > MAX_RETURN || p[0] !== "/" || p.startsWith("//") || p.includes("\\")) {
    return false;
  }
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

/**
 * @typedef {object} Options
 * @property {string} roomURL the node's public base URL, e.g. https://queue.shop.example. Required.
 * @property {string} event the sale's id: tokens of other sales are refused. Required.
 * @property {string} [jwksURL] the key set. Default: roomURL + JWKS_PATH.
 * @property {string} [issuer] the iss required (ANTEROOM_ISSUER). Default: "anteroom".
 * @property {string} [audience] the aud required (ANTEROOM_AUDIENCE). Default: "anteroom-claim".
 * @property {number} [leewaySeconds] clock skew tolerated on exp, nbf and iat. Default: 5.
 * @property {number} [refreshSeconds] how long fetched keys are used. Default: 300.
 * @property {number} [minRefetchSeconds] least time between two fetches (an unknown kid fetches at once). Default: 5.
 * @property {number} [timeoutSeconds] a fetch's time limit. Default: 10.
 * @property {(msg: string) => void} [log] told why a request failed closed. Default: console.error.
 * @property {typeof fetch} [fetch] fetches the key set. Default: globalThis.fetch.
 * @property {() => number} [now] the clock, in milliseconds. Default: Date.now.
 */

/**
 * @typedef {object} Admission
 * @property {string} user the token's sub.
 * @property {string} event the sale.
 * @property {Date} expiresAt the token's exp.
 * @property {string} [id] the token's jti.
 */

/** verifier returns verify(raw), which resolves the Admission a token
 * carries, rejects with a jose error (or a TypeError) for a token to
 * refuse, or with KeysUnavailable when no key can be had (fail closed).
 * @param {Options} o */
export function verifier(o) {
  const cfg = withDefaults(o);
  const keys = new Keys({
    url: cfg.jwksURL, refreshMs: cfg.refreshSeconds * 1000, minRefetchMs: cfg.minRefetchSeconds * 1000,
    timeoutMs: cfg.timeoutSeconds * 1000, now: cfg.now, fetch: cfg.fetch,
  });
  /** @param {string} raw @returns {Promise<Admission>} */
  return async function verify(raw) {
    const { payload } = await jwtVerify(raw, async (header) => {
      // jwtVerify has refused any alg but EdDSA before this is called.
      if (typeof header.kid !== "string" || header.kid === "") throw new errors.JWKSNoMatchingKey();
      if (header.crit !== undefined) throw new errors.JOSENotSupported("crit header not supported");
      const key = await keys.get(header.kid);
      if (key === undefined) throw new errors.JWKSNoMatchingKey();
      return key;
    }, {
      algorithms: ["EdDSA"],
      issuer: cfg.issuer,
      audience: cfg.audience,
      clockTolerance: cfg.leewaySeconds,
      requiredClaims: ["exp", "nbf", "iat", "sub"],
      currentDate: new Date(cfg.now()),
    });
    if (typeof payload.iat === "number" && payload.iat > cfg.now() / 1000 + cfg.leewaySeconds) {
      throw new errors.JWTClaimValidationFailed('"iat" claim in the future', payload, "iat", "check_failed");
    }
    if (payload.event !== cfg.event) {
      throw new errors.JWTClaimValidationFailed("another event's token", payload, "event", "check_failed");
    }
    if (typeof payload.sub !== "string" || payload.sub === "") {
      throw new errors.JWTClaimValidationFailed("no user", payload, "sub", "missing");
    }
    return {
      user: payload.sub, event: cfg.event, expiresAt: new Date(Number(payload.exp) * 1000),
      ...(typeof payload.jti === "string" ? { id: payload.jti } : {}),
    };
  };
}

/** anteroom returns the middleware (req, res, next), for Express, Connect
 * or node:http. A request with an admission token of the sale that
 * verifies — the admission cookie first, then an Authorization bearer —
 * goes on with the Admission in req.anteroom (and res.locals.anteroom
 * under Express). One with none, or none valid, is redirected (302,
 * no-store) to the sale's waiting page, with its URL as the return
 * address when that is a path on this site. When the keys cannot be had
 * and none cached fits, it answers 503 and logs why: it never lets a
 * request through without verifying it.
 * @param {Options} o */
export function anteroom(o) {
  const cfg = withDefaults(o);
  const verify = verifier(o);
  const cookie = admissionCookie(cfg.event);
  /** @param {import("node:http").IncomingMessage & {originalUrl?: string, anteroom?: Admission}} req
   * @param {import("node:http").ServerResponse & {locals?: Record<string, unknown>}} res
   * @param {(err?: unknown) => void} next */
  return async function anteroomAdmission(req, res, next) {
    /** @type {KeysUnavailable | null} */
    let unavailable = null;
    /** @type {Admission | null} */
    let adm = null;
    for (const raw of candidates(req, cookie)) {
      try {
        adm = await verify(raw);
        break;
      } catch (err) {
        if (err instanceof KeysUnavailable) unavailable = err;
      }
    }
    if (adm !== null) {
      // Outside the try: what the app throws is the app's, never a refusal.
      req.anteroom = adm;
      if (res.locals) res.locals.anteroom = adm;
      return next();
    }
    res.setHeader("Cache-Control", "no-store");
    if (unavailable !== null) {
      // A token that cannot be checked neither passes nor goes to the room
      // (which would send the admitted visitor straight back).
      cfg.log(`anteroom: failing closed: ${unavailable.message}`);
      res.statusCode = 503;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.setHeader("Retry-After", "5");
      res.end("admission cannot be checked now\n");
      return;
    }
    const ret = req.originalUrl ?? req.url ?? "";
    let page = `${cfg.roomURL}/e/${encodeURIComponent(cfg.event)}`;
    if (safeReturn(ret)) page += `?return=${encodeURIComponent(ret)}`;
    res.statusCode = 302;
    res.setHeader("Location", page);
    res.end();
  };
}

/** candidates returns the request's tokens: the cookie's, then the bearer's.
 * @param {import("node:http").IncomingMessage} req @param {string} name */
function candidates(req, name) {
  const out = [];
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const v = part.slice(eq + 1).trim();
      if (v !== "") out.push(v);
      break;
    }
  }
  const auth = req.headers.authorization ?? "";
  if (/^bearer /i.test(auth) && auth.slice(7).trim() !== "") out.push(auth.slice(7).trim());
  return out.filter((raw) => raw.length <= 8192);
}

/** @param {Options} o */
function withDefaults(o) {
  if (!o || typeof o.roomURL !== "string" || !/^https?:\/\/[^/]+/.test(o.roomURL)) {
    throw new TypeError("anteroom: roomURL must be the node's http(s) URL");
  }
  if (typeof o.event !== "string" || !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(o.event)) {
    throw new TypeError("anteroom: event must be the sale's id");
  }
  const roomURL = o.roomURL.replace(/\/+$/, "");
  const jwksURL = o.jwksURL ?? roomURL + JWKS_PATH;
  if (!/^https?:\/\//.test(jwksURL)) throw new TypeError("anteroom: jwksURL must be an http(s) URL");
  const pos = (v, d) => (typeof v === "number" && v > 0 ? v : d);
  return {
    roomURL, event: o.event, jwksURL,
    issuer: o.issuer ?? "anteroom",
    audience: o.audience ?? "anteroom-claim",
    leewaySeconds: typeof o.leewaySeconds === "number" && o.leewaySeconds >= 0 ? o.leewaySeconds : 5,
    refreshSeconds: pos(o.refreshSeconds, 300),
    minRefetchSeconds: pos(o.minRefetchSeconds, 5),
    timeoutSeconds: pos(o.timeoutSeconds, 10),
    log: o.log ?? ((m) => console.error(m)),
    fetch: o.fetch ?? globalThis.fetch,
    now: o.now ?? Date.now,
  };
}

export default anteroom;

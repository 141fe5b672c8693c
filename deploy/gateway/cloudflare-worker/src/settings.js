// @ts-check
// The Worker's settings: wrangler.toml's [vars], read and checked.

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
 * @property {string} [FAIL_OPEN_UNTIL] RFC 3339 deadline: until then, when anteroom cannot be reached, visitors pass to the origin; default "" (fail closed)
 * @property {string} [GATE_PATHS] comma-separated path prefixes ("/" = every protected path) whose requests the node's gate decides, the sale's door included; default "" (the offline check alone)
 */

/** The JWKS path on anteroom's nodes. */
export const JWKS_PATH = "/.well-known/jwks.json";
/** An RFC 3339 date-time with its offset (Z or ±hh:mm). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** How far ahead a fail-open deadline may be (anteroom's event.MaxFailOpen). */
export const MAX_FAIL_OPEN_MS = 24 * 3600 * 1000;
/** A path prefix of GATE_PATHS: a path of printable characters, no query or fragment. */
const GATE_PATH = /^\/[\x21-\x22\x24-\x3e\x40-\x7e]{0,1023}$/;
/** Event ids anteroom accepts. */
const EVENT_ID = /^[a-z0-9-]{1,64}$/;

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
 * @property {number} failOpenUntil ms since the epoch; 0 = no fail-open
 * @property {string[]} gatePaths path prefixes the gate decides; [] = none
 */

/**
 * settings reads env, or says what is wrong with it.
 *
 * @param {Env} env
 * @returns {Settings | string}
 */
export function settings(env) {
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
  let failOpenUntil = 0;
  if (env.FAIL_OPEN_UNTIL) {
    failOpenUntil = RFC3339.test(env.FAIL_OPEN_UNTIL) ? Date.parse(env.FAIL_OPEN_UNTIL) : NaN;
    if (!Number.isFinite(failOpenUntil)) {
      return `FAIL_OPEN_UNTIL ${JSON.stringify(env.FAIL_OPEN_UNTIL)} is not an RFC 3339 time`;
    }
  }
  const gatePaths = (env.GATE_PATHS || "").split(",").map((p) => p.trim()).filter((p) => p !== "");
  for (const p of gatePaths) {
    if (!GATE_PATH.test(p)) {
      return `GATE_PATHS: ${JSON.stringify(p)} is not a path prefix ("/drop/": a path, no query)`;
    }
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
    failOpenUntil,
    gatePaths,
  };
}

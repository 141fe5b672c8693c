// @ts-check
// Admission tokens, checked offline as anteroom checks them.

import { keysFor } from "./jwks.js";

/** @typedef {import("./settings.js").Settings} Settings */

/** Clock skew tolerated on exp, nbf and iat, as anteroom's own check. */
const LEEWAY_SECONDS = 5;
/** Longer tokens are refused before parsing, as anteroom does. */
const MAX_TOKEN_LEN = 4096;

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

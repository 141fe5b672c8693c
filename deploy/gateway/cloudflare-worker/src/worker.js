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
// - Unless the operator set a fail-open deadline (FAIL_OPEN_UNTIL, at most
//   24 h ahead): until then, when anteroom cannot be reached (no keys it
//   can trust, or the JWKS fetch failing), every visitor passes to the
//   origin with USER_HEADER removed and X-Anteroom-Fail-Open on the
//   answer; at the deadline it fails closed again by itself. Claims are
//   anteroom's: they still need an admission.
// - The offline check knows the token, not the sale's door (block and
//   eligibility lists, rules, verified crawlers). For the paths in
//   GATE_PATHS the Worker asks the node's gate instead, as nginx's
//   auth_request does, on every request (gate.js): 204 passes (as the
//   user it names, or nobody for a rule's bypass), 401 goes to the
//   waiting room, 403 refuses with the gate's answer; a gate that cannot
//   answer fails closed (503), or open until FAIL_OPEN_UNTIL.
//
// deploy/gateway/cloudflare-worker/README.md explains the settings;
// internal/node TestCloudflareWorker runs this package in miniflare
// (workerd) against a real anteroom node. The token check is in
// admission.js, the JWKS cache in jwks.js, the gate's call in gate.js,
// the settings in settings.js.

import { verifyAdmission } from "./admission.js";
import { askGate, gatePath } from "./gate.js";
import { reachable } from "./jwks.js";
import { JWKS_PATH, MAX_FAIL_OPEN_MS, settings } from "./settings.js";

/** @typedef {import("./settings.js").Env} Env */
/** @typedef {import("./settings.js").Settings} Settings */

/** Paths served by anteroom, on the shop's host. */
const ROOM_PATHS = /^\/(e|events|assets)\//;

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
    if (gatePath(cfg, url.pathname)) {
      return byGate(request, url, cfg);
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
    const failOpen = failingOpen(cfg, Date.now());
    if (unavailable) {
      // A token it cannot check: neither in nor to the room, unless the
      // operator's deadline is ahead.
      return failOpen ? toOriginFailOpen(request, url, cfg) : closed();
    }
    if (failOpen && !(await reachable(cfg, Date.now()))) {
      return toOriginFailOpen(request, url, cfg); // the room cannot answer either
    }
    return waitingRoom(url, cfg.event);
  },
};

/**
 * byGate lets the node's gate decide a protected request (GATE_PATHS),
 * the sale's door included, as nginx's auth_request does: through to the
 * origin as the user the gate names (nobody, for a rule's bypass), with
 * the cookies the gate set (a safety-net room's admission), to the
 * waiting page it names, or refused with its 403. When the gate cannot
 * answer: 503 (fail closed), or through to the origin naming nobody while
 * the fail-open deadline is ahead.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 * @returns {Promise<Response>}
 */
async function byGate(request, url, cfg) {
  const g = await askGate(request, url, cfg);
  if ("pass" in g) {
    const resp = await toOrigin(request, url, cfg, g.user);
    if (g.cookies.length === 0) {
      return resp;
    }
    const out = new Response(resp.body, resp); // as nginx-safety-net.conf's add_header Set-Cookie
    for (const c of g.cookies) {
      out.headers.append("Set-Cookie", c);
    }
    return out;
  }
  if ("redirect" in g) {
    return g.redirect.startsWith("/e/" + cfg.event) && safeReturn(g.redirect)
      ? redirect(g.redirect)
      : waitingRoom(url, cfg.event);
  }
  if ("refuse" in g) {
    return g.refuse;
  }
  const failOpen = failingOpen(cfg, Date.now());
  if (Date.now() - lastGateErrorLog >= 10_000) {
    lastGateErrorLog = Date.now();
    console.error(`anteroom gate: cannot ask the gate of ${cfg.anteroom} about ${url.pathname}: ${g.unavailable}; ` +
      (failOpen ? "failing open" : "refusing (fail closed)") + " (logged at most every 10 s)");
  }
  return failOpen ? toOriginFailOpen(request, url, cfg) : closed();
}

/** When the isolate last logged that the gate could not answer (ms): an outage is not a log line a request. */
let lastGateErrorLog = 0;

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
 * header set to user, overwriting whatever the client sent; user "" (the
 * gate let the request on for a rule's bypass, admitting nobody) removes
 * the client's.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 * @param {string} user
 */
function toOrigin(request, url, cfg, user) {
  const headers = new Headers(request.headers);
  if (user) {
    headers.set(cfg.userHeader, user);
  } else {
    headers.delete(cfg.userHeader);
  }
  const target = cfg.origin ? cfg.origin + url.pathname + url.search : request.url;
  return pass(target, request, headers, "the origin");
}

/**
 * failingOpen reports whether the operator's fail-open deadline is ahead
 * at now (ms). A deadline more than 24 h ahead is refused (logged), as
 * anteroom refuses one: a fail-open is time-boxed.
 *
 * @param {Settings} cfg
 * @param {number} now
 */
function failingOpen(cfg, now) {
  if (cfg.failOpenUntil <= now) {
    return false;
  }
  if (cfg.failOpenUntil - now > MAX_FAIL_OPEN_MS) {
    console.error("anteroom gate: FAIL_OPEN_UNTIL is more than 24 h ahead; ignored (fail closed)");
    return false;
  }
  return true;
}

/** When the isolate last logged that it fails open (ms). */
let lastFailOpenLog = 0;

/**
 * toOriginFailOpen passes a request to the shop while failing open: no
 * user header (nobody was admitted; the client's own is removed), and
 * X-Anteroom-Fail-Open with the deadline on the answer.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 */
async function toOriginFailOpen(request, url, cfg) {
  const headers = new Headers(request.headers);
  headers.delete(cfg.userHeader);
  const target = cfg.origin ? cfg.origin + url.pathname + url.search : request.url;
  const until = new Date(cfg.failOpenUntil).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (Date.now() - lastFailOpenLog >= 60_000) {
    lastFailOpenLog = Date.now();
    console.warn(`anteroom gate: anteroom cannot be reached; failing open until ${until} (logged once a minute)`);
  }
  const resp = await pass(target, request, headers, "the origin");
  const out = new Response(resp.body, resp);
  out.headers.set("X-Anteroom-Fail-Open", until);
  return out;
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
  return redirect(page);
}

/**
 * redirect is a 302 to page, a path on this site, never stored.
 *
 * @param {string} page
 */
function redirect(page) {
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

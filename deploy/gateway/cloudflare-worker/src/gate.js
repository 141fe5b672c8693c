// @ts-check
// Asking the node's gate (GET /events/{id}/gate, the call nginx's
// auth_request makes) about a protected request, for the paths in
// GATE_PATHS: the offline check knows only the admission token, while
// the gate applies the sale's door too (block lists, eligibility lists,
// rules on the request, verified crawlers), as of now.

/** @typedef {import("./settings.js").Settings} Settings */

/** How long the gate may take, as nginx's proxy_read_timeout in ../nginx.conf. */
const GATE_TIMEOUT_MS = 5000;
/** A refusal's body is anteroom's problem+json: small; more is cut. */
const MAX_REFUSAL_BYTES = 4096;

/**
 * The gate's answer about one request:
 * - pass: let it on to the origin, as user ("" = nobody admitted: a rule's
 *   bypass), with the cookies the gate set (a safety-net room's gate
 *   admits or renews with the admission cookie) on the origin's answer;
 * - redirect: to the waiting page at location (no admission, a sunk
 *   caller, a sale closed by staff);
 * - refuse: 403 (blocked, not_eligible), the gate's own answer;
 * - unavailable: the gate could not answer (why).
 *
 * @typedef {{pass: true, user: string, cookies: string[]} | {redirect: string} | {refuse: Response} | {unavailable: string}} GateAnswer
 */

/**
 * gatePath reports whether a protected path is one the Worker asks the
 * gate about: it starts with one of cfg.gatePaths.
 *
 * @param {Settings} cfg
 * @param {string} path
 */
export function gatePath(cfg, path) {
  return cfg.gatePaths.some((p) => path.startsWith(p));
}

/**
 * askGate asks the node's gate about request, as nginx's auth_request
 * does: a GET without a body carrying the visitor's headers (their
 * cookies and Authorization: the admission token, the visitor cookie, and
 * what rules read), the request it protects (X-Original-Method,
 * X-Original-URI), the visitor's address (X-Forwarded-For from
 * CF-Connecting-IP: the node believes it only from
 * ANTEROOM_TRUSTED_PROXIES), the host and scheme. The client's own
 * X-User-ID and USER_HEADER never reach it. Nothing is cached: neither
 * the answer (cache: no-store) nor a verdict in the isolate, so a list or
 * rule change applies to the next request.
 *
 * 204 passes (X-Anteroom-User names the admitted user; Set-Cookie, the
 * admission a safety-net room's gate gives or renews), 401 redirects to
 * X-Anteroom-Redirect, 403 refuses; any other answer, a failed fetch or
 * none within GATE_TIMEOUT_MS is unavailable, as auth_request turns them
 * into 500.
 *
 * @param {Request} request
 * @param {URL} url
 * @param {Settings} cfg
 * @returns {Promise<GateAnswer>}
 */
export async function askGate(request, url, cfg) {
  const headers = new Headers(request.headers);
  for (const h of ["Content-Length", "Content-Type", "Transfer-Encoding", "X-User-ID", cfg.userHeader,
    "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"]) {
    headers.delete(h);
  }
  headers.set("X-Original-Method", request.method);
  headers.set("X-Original-URI", url.pathname + url.search);
  const ip = request.headers.get("CF-Connecting-IP");
  if (ip) {
    headers.set("X-Forwarded-For", ip);
  }
  headers.set("X-Forwarded-Proto", url.protocol.replace(":", ""));
  headers.set("X-Forwarded-Host", url.host);
  // cache: no-store (the runtime's since compatibility date 2024-11-11,
  // not in the 2023-07-01 types): Cloudflare's cache neither answers nor
  // keeps the gate's answers, whatever their headers.
  /** @type {RequestInit & {cache: "no-store"}} */
  const init = { method: "GET", headers, redirect: "manual", cache: "no-store", signal: AbortSignal.timeout(GATE_TIMEOUT_MS) };
  /** @type {Response} */
  let resp;
  try {
    resp = await fetch(cfg.anteroom + "/events/" + cfg.event + "/gate", init);
  } catch (e) {
    return { unavailable: e instanceof Error ? e.message : String(e) };
  }
  switch (resp.status) {
    case 204:
      return { pass: true, user: resp.headers.get("X-Anteroom-User") || "", cookies: resp.headers.getSetCookie() };
    case 401: {
      await resp.body?.cancel();
      const to = resp.headers.get("X-Anteroom-Redirect") || "";
      return { redirect: to };
    }
    case 403:
      return { refuse: await refusal(resp) };
  }
  await resp.body?.cancel();
  return { unavailable: `HTTP ${resp.status}` };
}

/**
 * refusal is the visitor's answer to the gate's 403: its status and its
 * problem+json body (code blocked, or not_eligible with the sale's
 * message), never stored.
 *
 * @param {Response} resp
 */
async function refusal(resp) {
  const body = (await resp.text()).slice(0, MAX_REFUSAL_BYTES);
  return new Response(body, {
    status: 403,
    headers: {
      "Content-Type": resp.headers.get("Content-Type") || "text/plain; charset=utf-8",
      "Cache-Control": "no-store",
    },
  });
}

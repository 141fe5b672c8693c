// Generated from web/pages/js/anteroom/src/anteroom.ts by `npm run embed`
// in web/pages/js/anteroom (build.mjs, TypeScript 5.9.3); do not edit.
// @ts-self-types="./anteroom.d.ts"
// anteroom.js — a small, dependency-free client for anteroom waiting rooms
// (an ES module: import { Anteroom } from "/assets/anteroom.js", or from
// "@anteroom/client" in an app that installs the package).
//
// It keeps the rules a crowd needs: one request in flight per client; status
// polled at the server's poll_after_ms with jitter, so a crowd does not poll
// in lockstep; 429 and 503 answers back off, never sooner than Retry-After,
// doubling while they keep coming; a claim keeps its Idempotency-Key across
// retries (and page reloads, with storage), so a retried claim never takes
// a second unit.
/**
 * AnteroomError is thrown for a refusal that retrying cannot change (any
 * answer but 429 and 503, and those once maxAttempts have run out).
 */
export class AnteroomError extends Error {
    constructor(what, a) {
        const body = (a.body || {});
        super(body.detail || what + ": HTTP " + a.status);
        this.name = "AnteroomError";
        this.status = a.status;
        this.code = body.code || "";
        this.body = body;
    }
}
/** jitter spreads ms by ±spread (0.1: ±10 %). */
export function jitter(ms, spread = 0.1, rnd = Math.random) {
    return ms * (1 - spread + 2 * spread * rnd());
}
/**
 * backoffMs is the wait after a 429 or 503: at least Retry-After (seconds),
 * at least 500 ms doubling with each answer in a row (strikes), jittered,
 * at most a minute.
 */
export function backoffMs(retryAfterSeconds, strikes, rnd = Math.random) {
    const ra = Number(retryAfterSeconds) > 0 ? Number(retryAfterSeconds) * 1000 : 1000;
    const base = Math.max(ra, 500 * 2 ** Math.min(strikes, 6));
    return Math.min(Math.max(jitter(base, 0.15, rnd), ra) + 250, Math.max(60000, ra));
}
const sleep = (ms, signal) => new Promise((ok, fail) => {
    if (signal && signal.aborted)
        return fail(signal.reason);
    const t = setTimeout(ok, ms);
    if (signal)
        signal.addEventListener("abort", () => { clearTimeout(t); fail(signal.reason); }, { once: true });
});
const randomKey = () => "ar-" + Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, "0")).join("");
// Terminal states of a waiting person: polling stops.
const DONE = new Set(["admitted", "sold_out", "not_selected", "closed"]);
/**
 * Anteroom talks to one sale. Options: baseURL (default: same origin),
 * headers (added to every request, e.g. the shop's user token), storage
 * (a Storage such as localStorage, to keep the Idempotency-Key across
 * reloads), fetch, timeoutMs (per request, default 15000), maxAttempts
 * (default 20) and onRetry(info) called before each wait after a 429, 503
 * or network error with {what, status, waitMs, retryAfter}.
 */
export class Anteroom {
    constructor(eventId, opts = {}) {
        this.event = eventId;
        this.base = (opts.baseURL || "") + "/events/" + encodeURIComponent(eventId);
        this.headers = opts.headers || {};
        this.storage = opts.storage || null;
        this.fetch = opts.fetch || globalThis.fetch.bind(globalThis);
        this.timeoutMs = opts.timeoutMs || 15000;
        this.onRetry = opts.onRetry || (() => { });
        this.maxAttempts = opts.maxAttempts || 20;
        this.strikes = 0;
        this.notBefore = 0;
        this.chain = Promise.resolve(); // one request in flight
    }
    /**
     * request sends one request (path relative to the sale's /events/{id})
     * after the previous one has finished, and not before a 429's
     * Retry-After has passed, and returns {status, body, retryAfter,
     * headers}. init may set fetch's cache (default no-store).
     */
    request(method, path, headers, init = {}) {
        const run = async () => {
            const hold = this.notBefore - Date.now();
            if (hold > 0)
                await sleep(hold);
            const signal = AbortSignal.timeout ? AbortSignal.timeout(this.timeoutMs) : undefined;
            const r = await this.fetch(this.base + path, { method, headers: Object.assign({}, this.headers, headers), credentials: "same-origin", cache: init.cache || "no-store", signal });
            let body = {};
            try {
                body = (await r.json()) || {};
            }
            catch (e) { /* empty body */ }
            const retryAfter = r.headers.get("Retry-After") || body.retry_after_seconds;
            if (r.status === 429)
                this.notBefore = Math.max(this.notBefore, Date.now() + (Number(retryAfter) > 0 ? Number(retryAfter) * 1000 : 1000));
            return { status: r.status, body, retryAfter, headers: r.headers };
        };
        const p = this.chain.then(run, run);
        this.chain = p.catch(() => { });
        return p;
    }
    /**
     * retrying runs send until it gets an answer that is not 429, 503 or a
     * network error, backing off in between; after maxAttempts it returns
     * the last 429 or 503, or throws the last network error.
     */
    async retrying(what, send, signal) {
        for (let attempt = 1;; attempt++) {
            let a = null;
            try {
                a = await send();
            }
            catch (e) {
                if (signal && signal.aborted)
                    throw e;
                if (attempt >= this.maxAttempts)
                    throw e;
            }
            if (a && a.status !== 429 && a.status !== 503) {
                this.strikes = 0;
                return a;
            }
            if (a && attempt >= this.maxAttempts)
                return a;
            const waitMs = backoffMs(a ? a.retryAfter : 0, this.strikes++);
            this.onRetry({ what, status: a ? a.status : 0, waitMs, retryAfter: a ? Number(a.retryAfter) || 0 : 0 });
            await sleep(waitMs, signal);
        }
    }
    /**
     * join joins the queue (again: the same ticket) and returns the answer
     * body ({ticket, seq, position, state, poll_after_ms}); throws an
     * AnteroomError on a refusal other than 429/503.
     */
    async join(opts = {}) {
        const a = await this.retrying("join", () => this.request("POST", "/join", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("join", a);
        this.ticket = a.body.ticket;
        return a.body;
    }
    /**
     * status asks once (through 429/503); the ticket travels as the cookie
     * join set, or as a bearer when the client holds one.
     */
    async status(opts = {}) {
        const h = Object.assign({}, opts.headers, this.ticket ? { "Authorization": "Bearer " + this.ticket } : {});
        return this.retrying("status", () => this.request("GET", "/status", h), opts.signal);
    }
    /**
     * waitForTurn polls status until the person is admitted or the sale is
     * over for them, calling onUpdate(status) after each answer, and returns
     * the last status (admission_token set when admitted). Between polls it
     * waits the server's poll_after_ms, jittered by ±10 %.
     */
    async waitForTurn(opts = {}) {
        for (;;) {
            const a = await this.status(opts);
            if (a.status !== 200)
                throw new AnteroomError("status", a);
            if (opts.onUpdate)
                opts.onUpdate(a.body);
            // A room staff closed (closed_by "staff") keeps the place: poll on.
            if (DONE.has(a.body.state) && (a.body.state !== "admitted" || a.body.admission_token) && a.body.closed_by !== "staff")
                return a.body;
            await sleep(jitter(a.body.poll_after_ms || 5000, 0.1), opts.signal);
        }
    }
    /**
     * idempotencyKey is the key of this sale's claim in progress: the same
     * on every retry (and, with storage, after a reload) until the claim
     * gets a definite answer.
     */
    idempotencyKey() {
        const k = "anteroom_claim_key_" + this.event;
        let key = this.pendingKey || (this.storage && this.storage.getItem(k));
        if (!key)
            key = randomKey();
        this.pendingKey = key;
        if (this.storage)
            this.storage.setItem(k, key);
        return key;
    }
    /** forgetKey drops the key once its claim has a definite answer. */
    forgetKey() {
        this.pendingKey = null;
        if (this.storage)
            this.storage.removeItem("anteroom_claim_key_" + this.event);
    }
    /**
     * claim claims a unit with an admission token, retrying 429, 503 and
     * network errors with one Idempotency-Key. Returns {status, body,
     * idempotencyKey}: 201 or 200 (a replay) with {claim_id, status}, or the
     * refusal (410 sold_out, 409 limit_reached, …). After a 429 or 503 that
     * outlasted maxAttempts, or a network error, the key is kept: the next
     * claim call retries with it.
     */
    async claim(token, opts = {}) {
        const key = this.idempotencyKey();
        const a = await this.retrying("claim", () => this.request("POST", "/claim", Object.assign({}, opts.headers, { "Authorization": "Bearer " + token, "Idempotency-Key": key })), opts.signal);
        if (a.status !== 429 && a.status !== 503)
            this.forgetKey();
        return { status: a.status, body: a.body, idempotencyKey: key };
    }
    /**
     * claims lists the caller's own claims in this sale (the caller as the
     * node names it: visitor cookie, the gateway's header or the shop's user
     * token in headers). Throws an AnteroomError on a refusal.
     */
    async claims(opts = {}) {
        const a = await this.retrying("claims", () => this.request("GET", "/claims", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("claims", a);
        return a.body.claims || [];
    }
    /**
     * release gives a claimed unit back and returns the claim (status
     * "released"). Releasing twice answers the released claim again, so
     * release retries 429, 503 and network errors. Throws an AnteroomError
     * on a refusal (404 not_found, 403 forbidden, 409 conflict).
     */
    async release(claimId, opts = {}) {
        const a = await this.retrying("release", () => this.request("POST", "/claims/" + encodeURIComponent(claimId) + "/release", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("release", a);
        return a.body;
    }
}

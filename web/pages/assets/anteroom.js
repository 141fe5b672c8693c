// Generated from web/pages/js/anteroom/src/anteroom.ts by `npm run embed`
// in web/pages/js/anteroom (build.mjs, TypeScript 5.9.3); do not edit.
// @ts-self-types="./anteroom.d.ts"
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
export function jitter(ms, spread = 0.1, rnd = Math.random) {
    return ms * (1 - spread + 2 * spread * rnd());
}
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
const DONE = new Set(["admitted", "sold_out", "not_selected", "closed"]);
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
        this.chain = Promise.resolve();
    }
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
            catch (e) { }
            const retryAfter = r.headers.get("Retry-After") || body.retry_after_seconds;
            if (r.status === 429)
                this.notBefore = Math.max(this.notBefore, Date.now() + (Number(retryAfter) > 0 ? Number(retryAfter) * 1000 : 1000));
            return { status: r.status, body, retryAfter, headers: r.headers };
        };
        const p = this.chain.then(run, run);
        this.chain = p.catch(() => { });
        return p;
    }
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
    async join(opts = {}) {
        const a = await this.retrying("join", () => this.request("POST", "/join", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("join", a);
        this.ticket = a.body.ticket;
        return a.body;
    }
    async status(opts = {}) {
        const h = Object.assign({}, opts.headers, this.ticket ? { "Authorization": "Bearer " + this.ticket } : {});
        return this.retrying("status", () => this.request("GET", "/status", h), opts.signal);
    }
    async waitForTurn(opts = {}) {
        for (;;) {
            const a = await this.status(opts);
            if (a.status !== 200)
                throw new AnteroomError("status", a);
            if (opts.onUpdate)
                opts.onUpdate(a.body);
            if (DONE.has(a.body.state) && (a.body.state !== "admitted" || a.body.admission_token) && a.body.closed_by !== "staff")
                return a.body;
            await sleep(jitter(a.body.poll_after_ms || 5000, 0.1), opts.signal);
        }
    }
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
    forgetKey() {
        this.pendingKey = null;
        if (this.storage)
            this.storage.removeItem("anteroom_claim_key_" + this.event);
    }
    async claim(token, opts = {}) {
        const key = this.idempotencyKey();
        const a = await this.retrying("claim", () => this.request("POST", "/claim", Object.assign({}, opts.headers, { "Authorization": "Bearer " + token, "Idempotency-Key": key })), opts.signal);
        if (a.status !== 429 && a.status !== 503)
            this.forgetKey();
        return { status: a.status, body: a.body, idempotencyKey: key };
    }
    async claims(opts = {}) {
        const a = await this.retrying("claims", () => this.request("GET", "/claims", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("claims", a);
        return a.body.claims || [];
    }
    async release(claimId, opts = {}) {
        const a = await this.retrying("release", () => this.request("POST", "/claims/" + encodeURIComponent(claimId) + "/release", opts.headers), opts.signal);
        if (a.status !== 200)
            throw new AnteroomError("release", a);
        return a.body;
    }
}

// Generated from web/pages/js/anteroom/src/anteroom.ts by `npm run embed`
// in web/pages/js/anteroom (build.mjs, TypeScript 5.9.3); do not edit.
/** A visitor's state in a sale, as join and status answer it. */
export type State = "prequeue" | "waiting" | "admitted" | "sold_out" | "not_selected" | "paused" | "closed" | (string & {});
/** The answer to POST /events/{id}/join. */
export interface Joined {
    ticket: string;
    seq: number;
    position: number | null;
    state: State;
    poll_after_ms: number;
    /** The caller's lane; absent for the default one. */
    lane?: string;
    /** Set when a safety-net room admits at once. */
    admission_token?: string;
    admission_expires_at?: string;
}
/** The answer to GET /events/{id}/status. */
export interface Status {
    state: State;
    position: number | null;
    ahead: number;
    eta_seconds: number;
    poll_after_ms: number;
    /** "staff" while staff have the room closed: the place is kept. */
    closed_by?: "staff";
    admission_token?: string;
    admission_expires_at?: string;
}
/** A claim as POST /claim and POST /claims/{id}/release answer it. */
export interface Claim {
    claim_id: string;
    status: "pending" | "confirmed" | "released";
}
/** One of the caller's claims (GET /events/{id}/claims). */
export interface ClaimRecord extends Claim {
    event: string;
    position?: number;
    claimed_at?: string;
}
/** An RFC 9457 problem, the body of every refusal. */
export interface Problem {
    type?: string;
    title?: string;
    status?: number;
    /** The error code (docs/api.md's table): sold_out, rate_limited, paused, … */
    code?: string;
    detail?: string;
    request_id?: string;
    /** The claims held (limit_reached). */
    claim_ids?: string[];
    retry_after_seconds?: number;
}
/** One answer from the server: its status, parsed body and Retry-After. */
export interface Answer<B = Record<string, unknown>> {
    status: number;
    /** The JSON body, {} when there is none. */
    body: B;
    /** Retry-After (seconds) or the problem's retry_after_seconds. */
    retryAfter: string | number | null | undefined;
    headers: Headers;
}
/** What onRetry is told before each wait. */
export interface RetryInfo {
    /** The call being retried: "join", "status", "claim", "claims" or "release". */
    what: string;
    /** 429 or 503; 0 for a network error or timeout. */
    status: number;
    /** How long the client waits before the next attempt. */
    waitMs: number;
    /** The server's Retry-After in seconds, 0 when it sent none. */
    retryAfter: number;
}
/** Where the claim's Idempotency-Key is kept: localStorage fits. */
export interface KeyStorage {
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
    removeItem(key: string): void;
}
/** The options of new Anteroom(eventId, options). */
export interface AnteroomOptions {
    /** The node's origin, e.g. "https://queue.shop.example". Default: same origin. */
    baseURL?: string;
    /** Added to every request, e.g. the shop's user token. */
    headers?: Record<string, string>;
    /** Keeps the claim's Idempotency-Key across reloads. Default: none. */
    storage?: KeyStorage | null;
    /** The fetch to use. Default: globalThis.fetch. */
    fetch?: typeof fetch;
    /** Per request. Default: 15000. */
    timeoutMs?: number;
    /** Attempts of one call through 429, 503 and network errors. Default: 20. */
    maxAttempts?: number;
    /** Called before each wait after a 429, 503 or network error. */
    onRetry?: (info: RetryInfo) => void;
}
/** Per-call options. */
export interface CallOptions {
    /** Aborts the call, its retries and its waits. */
    signal?: AbortSignal;
    /** Added to this call's request. */
    headers?: Record<string, string>;
}
/** The options of waitForTurn. */
export interface WaitOptions extends CallOptions {
    /** Called with every status answer. */
    onUpdate?: (status: Status) => void;
}
/**
 * A claim's answer body: the claim (201, 200) or the problem (a refusal,
 * whose status is the HTTP status).
 */
export interface ClaimAnswer extends Omit<Problem, "status"> {
    /** Set on 201 and 200. */
    claim_id?: string;
    status?: Claim["status"] | number;
}
/** What claim returns: the answer, refusals included, and its key. */
export interface ClaimResult {
    /** 201 (a new claim), 200 (a replay), or the refusal's status. */
    status: number;
    body: ClaimAnswer;
    idempotencyKey: string;
}
/**
 * AnteroomError is thrown for a refusal that retrying cannot change (any
 * answer but 429 and 503, and those once maxAttempts have run out).
 */
export declare class AnteroomError extends Error {
    /** The HTTP status. */
    status: number;
    /** The problem's code, "" when the body has none. */
    code: string;
    /** The answer's body: an RFC 9457 problem. */
    body: Problem;
    constructor(what: string, a: Answer<unknown>);
}
/** jitter spreads ms by ±spread (0.1: ±10 %). */
export declare function jitter(ms: number, spread?: number, rnd?: () => number): number;
/**
 * backoffMs is the wait after a 429 or 503: at least Retry-After (seconds),
 * at least 500 ms doubling with each answer in a row (strikes), jittered,
 * at most a minute.
 */
export declare function backoffMs(retryAfterSeconds: unknown, strikes: number, rnd?: () => number): number;
/**
 * Anteroom talks to one sale. Options: baseURL (default: same origin),
 * headers (added to every request, e.g. the shop's user token), storage
 * (a Storage such as localStorage, to keep the Idempotency-Key across
 * reloads), fetch, timeoutMs (per request, default 15000), maxAttempts
 * (default 20) and onRetry(info) called before each wait after a 429, 503
 * or network error with {what, status, waitMs, retryAfter}.
 */
export declare class Anteroom {
    /** The sale's id. */
    event: string;
    /** The sale's URL prefix: baseURL + "/events/" + id. */
    base: string;
    headers: Record<string, string>;
    storage: KeyStorage | null;
    fetch: typeof fetch;
    timeoutMs: number;
    onRetry: (info: RetryInfo) => void;
    maxAttempts: number;
    /** 429 and 503 answers in a row: each doubles the next wait. */
    strikes: number;
    /** The ticket join returned; status sends it as a bearer. */
    ticket?: string;
    /** The Idempotency-Key of the claim in progress. */
    pendingKey?: string | null;
    /**
     * No request is sent before this time (ms since the epoch): a 429's
     * Retry-After holds every call of the client, not only the one retried.
     */
    notBefore: number;
    private chain;
    constructor(eventId: string, opts?: AnteroomOptions);
    /**
     * request sends one request (path relative to the sale's /events/{id})
     * after the previous one has finished, and not before a 429's
     * Retry-After has passed, and returns {status, body, retryAfter,
     * headers}. init may set fetch's cache (default no-store).
     */
    request<B = Record<string, unknown>>(method: string, path: string, headers?: Record<string, string>, init?: {
        cache?: RequestCache;
    }): Promise<Answer<B>>;
    /**
     * retrying runs send until it gets an answer that is not 429, 503 or a
     * network error, backing off in between; after maxAttempts it returns
     * the last 429 or 503, or throws the last network error.
     */
    retrying<B>(what: string, send: () => Promise<Answer<B>>, signal?: AbortSignal): Promise<Answer<B>>;
    /**
     * join joins the queue (again: the same ticket) and returns the answer
     * body ({ticket, seq, position, state, poll_after_ms}); throws an
     * AnteroomError on a refusal other than 429/503.
     */
    join(opts?: CallOptions): Promise<Joined>;
    /**
     * status asks once (through 429/503); the ticket travels as the cookie
     * join set, or as a bearer when the client holds one.
     */
    status(opts?: CallOptions): Promise<Answer<Status & Problem>>;
    /**
     * waitForTurn polls status until the person is admitted or the sale is
     * over for them, calling onUpdate(status) after each answer, and returns
     * the last status (admission_token set when admitted). Between polls it
     * waits the server's poll_after_ms, jittered by ±10 %.
     */
    waitForTurn(opts?: WaitOptions): Promise<Status>;
    /**
     * idempotencyKey is the key of this sale's claim in progress: the same
     * on every retry (and, with storage, after a reload) until the claim
     * gets a definite answer.
     */
    idempotencyKey(): string;
    /** forgetKey drops the key once its claim has a definite answer. */
    forgetKey(): void;
    /**
     * claim claims a unit with an admission token, retrying 429, 503 and
     * network errors with one Idempotency-Key. Returns {status, body,
     * idempotencyKey}: 201 or 200 (a replay) with {claim_id, status}, or the
     * refusal (410 sold_out, 409 limit_reached, …). After a 429 or 503 that
     * outlasted maxAttempts, or a network error, the key is kept: the next
     * claim call retries with it.
     */
    claim(token: string, opts?: CallOptions): Promise<ClaimResult>;
    /**
     * claims lists the caller's own claims in this sale (the caller as the
     * node names it: visitor cookie, the gateway's header or the shop's user
     * token in headers). Throws an AnteroomError on a refusal.
     */
    claims(opts?: CallOptions): Promise<ClaimRecord[]>;
    /**
     * release gives a claimed unit back and returns the claim (status
     * "released"). Releasing twice answers the released claim again, so
     * release retries 429, 503 and network errors. Throws an AnteroomError
     * on a refusal (404 not_found, 403 forbidden, 409 conflict).
     */
    release(claimId: string, opts?: CallOptions): Promise<Claim>;
}

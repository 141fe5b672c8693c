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
export class AnteroomError extends Error {
  /** The HTTP status. */
  status: number;
  /** The problem's code, "" when the body has none. */
  code: string;
  /** The answer's body: an RFC 9457 problem. */
  body: Problem;

  constructor(what: string, a: Answer<unknown>) {
    const body = (a.body || {}) as Problem;
    super(body.detail || what + ": HTTP " + a.status);
    this.name = "AnteroomError";
    this.status = a.status;
    this.code = body.code || "";
    this.body = body;
  }
}

/** jitter spreads ms by ±spread (0.1: ±10 %). */
export function jitter(ms: number, spread = 0.1, rnd: () => number = Math.random): number {
  return ms * (1 - spread + 2 * spread * rnd());
}

/**
 * backoffMs is the wait after a 429 or 503: at least Retry-After (seconds),
 * at least 500 ms doubling with each answer in a row (strikes), jittered,
 * at most a minute.
 */
export function backoffMs(retryAfterSeconds: unknown, strikes: number, rnd: () => number = Math.random): number {
  const ra = Number(retryAfterSeconds) > 0 ? Number(retryAfterSeconds) * 1000 : 1000;
  const base = Math.max(ra, 500 * 2 ** Math.min(strikes, 6));
  return Math.min(Math.max(jitter(base, 0.15, rnd), ra) + 250, Math.max(60000, ra));
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((ok, fail) => {
  if (signal && signal.aborted) return fail(signal.reason);
  const t = setTimeout(ok, ms);
  if (signal) signal.addEventListener("abort", () => { clearTimeout(t); fail(signal.reason); }, {once: true});
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
  private chain: Promise<unknown>;

  constructor(eventId: string, opts: AnteroomOptions = {}) {
    this.event = eventId;
    this.base = (opts.baseURL || "") + "/events/" + encodeURIComponent(eventId);
    this.headers = opts.headers || {};
    this.storage = opts.storage || null;
    this.fetch = opts.fetch || globalThis.fetch.bind(globalThis);
    this.timeoutMs = opts.timeoutMs || 15000;
    this.onRetry = opts.onRetry || (() => {});
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
  request<B = Record<string, unknown>>(method: string, path: string, headers?: Record<string, string>, init: {cache?: RequestCache} = {}): Promise<Answer<B>> {
    const run = async (): Promise<Answer<B>> => {
      const hold = this.notBefore - Date.now();
      if (hold > 0) await sleep(hold);
      const signal = AbortSignal.timeout ? AbortSignal.timeout(this.timeoutMs) : undefined;
      const r = await this.fetch(this.base + path, {method, headers: Object.assign({}, this.headers, headers), credentials: "same-origin", cache: init.cache || "no-store", signal});
      let body = {} as B;
      try { body = (await r.json()) || {}; } catch (e) { /* empty body */ }
      const retryAfter = r.headers.get("Retry-After") || (body as Problem).retry_after_seconds;
      if (r.status === 429) this.notBefore = Math.max(this.notBefore, Date.now() + (Number(retryAfter) > 0 ? Number(retryAfter) * 1000 : 1000));
      return {status: r.status, body, retryAfter, headers: r.headers};
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => {});
    return p;
  }

  /**
   * retrying runs send until it gets an answer that is not 429, 503 or a
   * network error, backing off in between; after maxAttempts it returns
   * the last 429 or 503, or throws the last network error.
   */
  async retrying<B>(what: string, send: () => Promise<Answer<B>>, signal?: AbortSignal): Promise<Answer<B>> {
    for (let attempt = 1; ; attempt++) {
      let a: Answer<B> | null = null;
      try {
        a = await send();
      } catch (e) {
        if (signal && signal.aborted) throw e;
        if (attempt >= this.maxAttempts) throw e;
      }
      if (a && a.status !== 429 && a.status !== 503) {
        this.strikes = 0;
        return a;
      }
      if (a && attempt >= this.maxAttempts) return a;
      const waitMs = backoffMs(a ? a.retryAfter : 0, this.strikes++);
      this.onRetry({what, status: a ? a.status : 0, waitMs, retryAfter: a ? Number(a.retryAfter) || 0 : 0});
      await sleep(waitMs, signal);
    }
  }

  /**
   * join joins the queue (again: the same ticket) and returns the answer
   * body ({ticket, seq, position, state, poll_after_ms}); throws an
   * AnteroomError on a refusal other than 429/503.
   */
  async join(opts: CallOptions = {}): Promise<Joined> {
    const a = await this.retrying("join", () => this.request<Joined & Problem>("POST", "/join", opts.headers), opts.signal);
    if (a.status !== 200) throw new AnteroomError("join", a);
    this.ticket = a.body.ticket;
    return a.body;
  }

  /**
   * status asks once (through 429/503); the ticket travels as the cookie
   * join set, or as a bearer when the client holds one.
   */
  async status(opts: CallOptions = {}): Promise<Answer<Status & Problem>> {
    const h: Record<string, string> = Object.assign({}, opts.headers, this.ticket ? {"Authorization": "Bearer " + this.ticket} : {});
    return this.retrying("status", () => this.request<Status & Problem>("GET", "/status", h), opts.signal);
  }

  /**
   * waitForTurn polls status until the person is admitted or the sale is
   * over for them, calling onUpdate(status) after each answer, and returns
   * the last status (admission_token set when admitted). Between polls it
   * waits the server's poll_after_ms, jittered by ±10 %.
   */
  async waitForTurn(opts: WaitOptions = {}): Promise<Status> {
    for (;;) {
      const a = await this.status(opts);
      if (a.status !== 200) throw new AnteroomError("status", a);
      if (opts.onUpdate) opts.onUpdate(a.body);
      // A room staff closed (closed_by "staff") keeps the place: poll on.
      if (DONE.has(a.body.state) && (a.body.state !== "admitted" || a.body.admission_token) && a.body.closed_by !== "staff") return a.body;
      await sleep(jitter(a.body.poll_after_ms || 5000, 0.1), opts.signal);
    }
  }

  /**
   * idempotencyKey is the key of this sale's claim in progress: the same
   * on every retry (and, with storage, after a reload) until the claim
   * gets a definite answer.
   */
  idempotencyKey(): string {
    const k = "anteroom_claim_key_" + this.event;
    let key = this.pendingKey || (this.storage && this.storage.getItem(k));
    if (!key) key = randomKey();
    this.pendingKey = key;
    if (this.storage) this.storage.setItem(k, key);
    return key;
  }

  /** forgetKey drops the key once its claim has a definite answer. */
  forgetKey(): void {
    this.pendingKey = null;
    if (this.storage) this.storage.removeItem("anteroom_claim_key_" + this.event);
  }

  /**
   * claim claims a unit with an admission token, retrying 429, 503 and
   * network errors with one Idempotency-Key. Returns {status, body,
   * idempotencyKey}: 201 or 200 (a replay) with {claim_id, status}, or the
   * refusal (410 sold_out, 409 limit_reached, …). After a 429 or 503 that
   * outlasted maxAttempts, or a network error, the key is kept: the next
   * claim call retries with it.
   */
  async claim(token: string, opts: CallOptions = {}): Promise<ClaimResult> {
    const key = this.idempotencyKey();
    const a = await this.retrying("claim", () => this.request<ClaimAnswer>("POST", "/claim", Object.assign({}, opts.headers, {"Authorization": "Bearer " + token, "Idempotency-Key": key})), opts.signal);
    if (a.status !== 429 && a.status !== 503) this.forgetKey();
    return {status: a.status, body: a.body, idempotencyKey: key};
  }

  /**
   * claims lists the caller's own claims in this sale (the caller as the
   * node names it: visitor cookie, the gateway's header or the shop's user
   * token in headers). Throws an AnteroomError on a refusal.
   */
  async claims(opts: CallOptions = {}): Promise<ClaimRecord[]> {
    const a = await this.retrying("claims", () => this.request<{claims: ClaimRecord[]} & Problem>("GET", "/claims", opts.headers), opts.signal);
    if (a.status !== 200) throw new AnteroomError("claims", a);
    return a.body.claims || [];
  }

  /**
   * release gives a claimed unit back and returns the claim (status
   * "released"). Releasing twice answers the released claim again, so
   * release retries 429, 503 and network errors. Throws an AnteroomError
   * on a refusal (404 not_found, 403 forbidden, 409 conflict).
   */
  async release(claimId: string, opts: CallOptions = {}): Promise<Claim> {
    const a = await this.retrying("release", () => this.request<Claim>("POST", "/claims/" + encodeURIComponent(claimId) + "/release", opts.headers), opts.signal);
    if (a.status !== 200) throw new AnteroomError("release", a);
    return a.body;
  }
}

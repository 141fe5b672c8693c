// The client against a real anteroom node, which Go's TestClientPackageInNode
// (internal/jsclient) starts in header identity mode behind a trusted
// loopback proxy: ANTEROOM_URL and ANTEROOM_ADMIN_TOKEN name it, and each
// client names its user with X-User-ID. Without ANTEROOM_URL these tests
// are skipped (the Go test sets it; under CI it never skips).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Anteroom, AnteroomError } from "@anteroom/client";

const URL_ = process.env.ANTEROOM_URL;
const ADMIN = process.env.ANTEROOM_ADMIN_TOKEN;
const skip = URL_ ? false : "ANTEROOM_URL not set: run through go test ./internal/jsclient";
// Each test's bound: a hung wait fails the test instead of the run.
const timeout = 180_000;
const EARLY = 20; // ms a timer may fire early by clock granularity

async function admin(method, path, body) {
  const r = await fetch(URL_ + "/admin" + path, {method, headers: {"Authorization": "Bearer " + ADMIN, "Content-Type": "application/json"}, body: body && JSON.stringify(body)});
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} /admin${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

// sale creates an open sale (started a second ago) with extra settings.
async function sale(id, extra = {}) {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const iso = (ms) => new Date(ms).toISOString();
  await admin("PUT", "/events/" + id, Object.assign({
    name: "JS client " + id, supply: 10, per_user_limit: 1,
    prequeue_opens_at: iso(now - 2000), starts_at: iso(now - 1000), ends_at: iso(now + 3600_000),
    random_window_seconds: 0, admit_rate_per_second: 1000,
  }, extra));
}

// recorder wraps fetch: every request the client sends, when it was sent
// and answered, its Idempotency-Key and the answer; and the most requests
// in flight at once.
function recorder() {
  const rec = {calls: [], inFlight: 0, most: 0};
  rec.fetch = async (url, init) => {
    const call = {path: new URL(url).pathname, key: (init.headers || {})["Idempotency-Key"] || "", sent: performance.now()};
    rec.calls.push(call);
    rec.most = Math.max(rec.most, ++rec.inFlight);
    try {
      const r = await fetch(url, init);
      call.status = r.status;
      call.retryAfter = Number(r.headers.get("Retry-After")) || 0;
      try { call.body = await r.clone().json(); } catch (e) { call.body = {}; }
      return r;
    } finally {
      call.answered = performance.now();
      rec.inFlight--;
    }
  };
  return rec;
}

// client is a client of ev for user with a recorder and a Map as storage.
function client(ev, user, opts = {}) {
  const rec = recorder();
  const store = new Map();
  const storage = {getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k)};
  const retries = [];
  const c = new Anteroom(ev, Object.assign({baseURL: URL_, headers: {"X-User-ID": user}, fetch: rec.fetch, storage, onRetry: (i) => retries.push(i)}, opts));
  return {c, rec, store, retries};
}

// waitedAfter checks that every request to path after an answer with
// status came no sooner than that answer's Retry-After, and returns how
// many such answers there were.
function waitedAfter(rec, path, status) {
  const calls = rec.calls.filter((x) => x.path.endsWith(path));
  let n = 0;
  for (let i = 0; i + 1 < calls.length; i++) {
    if (calls[i].status !== status) continue;
    n++;
    assert.ok(calls[i].retryAfter >= 1, `${status} on ${path} without Retry-After`);
    const gap = calls[i + 1].sent - calls[i].answered;
    assert.ok(gap >= calls[i].retryAfter * 1000 - EARLY, `asked ${path} again ${gap.toFixed(0)} ms after a ${status} with Retry-After ${calls[i].retryAfter}`);
  }
  return n;
}

test("joins, polls at the server's pace and is admitted", {skip, timeout}, async () => {
  await sale("pace", {admit_rate_per_second: 0.5});
  for (const u of ["p1", "p2", "p3", "p4"]) await client("pace", u).c.join();
  const {c, rec} = client("pace", "p5");
  const joined = await c.join();
  assert.ok(joined.ticket, `join: ${JSON.stringify(joined)}`);
  const seen = [];
  const st = await c.waitForTurn({onUpdate: (s) => seen.push(s.state)});
  assert.equal(st.state, "admitted");
  assert.ok(st.admission_token, "admitted without a token");
  assert.ok(seen.length >= 2 && seen[0] !== "admitted" && seen.at(-1) === "admitted", `states ${seen}`);
  const polls = rec.calls.filter((x) => x.path.endsWith("/status"));
  assert.ok(polls.length >= 2, `${polls.length} polls`);
  for (let i = 0; i + 1 < polls.length; i++) {
    const asked = polls[i].body.poll_after_ms;
    assert.ok(asked > 0, `poll_after_ms ${asked}`);
    const gap = polls[i + 1].sent - polls[i].answered;
    assert.ok(gap >= 0.9 * asked - EARLY, `polled ${gap.toFixed(0)} ms after an answer that asked for ${asked} ms`);
  }
  assert.equal(rec.most, 1, "requests overlapped");
});

test("a join refused with 429 waits for Retry-After and keeps the ticket", {skip, timeout}, async () => {
  await sale("busy", {limits: {join: {user: {per_second: 0.5, burst: 1}}}});
  const {c, rec, retries} = client("busy", "b1");
  const first = await c.join();
  const again = await c.join();
  assert.equal(again.ticket, first.ticket, "a second join got another ticket");
  assert.ok(waitedAfter(rec, "/join", 429) >= 1, "no 429: the join limit did not bite");
  assert.ok(retries.length >= 1 && retries[0].what === "join" && retries[0].status === 429);
  assert.ok(retries[0].waitMs >= retries[0].retryAfter * 1000, `waitMs ${retries[0].waitMs} under Retry-After ${retries[0].retryAfter}`);
});

test("a 429 holds every request of the client until Retry-After; requests never overlap", {skip, timeout}, async () => {
  await sale("polls", {admit_rate_per_second: 0.01, limits: {status: {ticket: {per_second: 1, burst: 1}}}});
  await client("polls", "q0").c.join();
  const {c, rec} = client("polls", "q1");
  await c.join();
  const answers = await Promise.all([c.status(), c.status(), c.status()]);
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
  assert.ok(waitedAfter(rec, "/status", 429) >= 1, "no 429: the status limit did not bite");
  assert.equal(rec.most, 1, "requests overlapped");
});

test("a claim through 503 keeps one Idempotency-Key and takes one unit", {skip, timeout}, async () => {
  await sale("claim", {supply: 3});
  const {c, rec, store, retries} = client("claim", "c1");
  await c.join();
  const {admission_token: token} = await c.waitForTurn();
  await admin("POST", "/events/claim/pause");
  const claimed = c.claim(token);
  // Bounded waits that name what was sent: a hang says what it saw. A
  // claim answered while the sale is paused fails at once: the node did
  // not hold the pause it had answered (a tick in progress that read the
  // configuration before the pause replaced the paused view; see
  // TestSaveHoldsOverATickInProgress in sale).
  const seen = () => JSON.stringify({calls: rec.calls, retries});
  let answered = false;
  claimed.then(() => { answered = true; }, () => { answered = true; });
  for (const end = Date.now() + 60_000; retries.length < 2; await new Promise((ok) => setTimeout(ok, 50))) {
    assert.ok(!answered, "the claim was answered while the sale was paused: " + seen());
    assert.ok(Date.now() < end, "no second retry of the paused claim in 60 s: " + seen());
  }
  assert.ok(store.get("anteroom_claim_key_claim"), "the key is not stored while the claim is pending");
  await admin("POST", "/events/claim/resume");
  let stuck;
  const res = await Promise.race([claimed, new Promise((_, no) => { stuck = setTimeout(() => no(new Error("the claim did not end 90 s after the resume: " + seen())), 90_000); })]);
  clearTimeout(stuck);
  assert.equal(res.status, 201, JSON.stringify(res));
  assert.ok(res.body.claim_id);
  const claims = rec.calls.filter((x) => x.path.endsWith("/claim"));
  assert.ok(claims.length >= 3, `${claims.length} claim requests`);
  assert.deepEqual([...new Set(claims.map((x) => x.key))], [res.idempotencyKey], "the retries changed the Idempotency-Key");
  assert.ok(waitedAfter(rec, "/claim", 503) >= 2);
  assert.equal(retries[0].status, 503);
  assert.ok(!store.has("anteroom_claim_key_claim"), "the key is still stored after the claim's answer");

  const mine = await c.claims();
  assert.deepEqual(mine.map((x) => [x.claim_id, x.status]), [[res.body.claim_id, "pending"]]);

  // The same key again (a reload with the key stored): a replay of the
  // same claim, no second unit.
  store.set("anteroom_claim_key_claim", res.idempotencyKey);
  const fresh = client("claim", "c1");
  fresh.store.set("anteroom_claim_key_claim", res.idempotencyKey);
  const replay = await fresh.c.claim(token);
  assert.equal(replay.status, 200, JSON.stringify(replay));
  assert.equal(replay.body.claim_id, res.body.claim_id);
  // A new key: the per-user limit answers, and the answer is final.
  const other = await client("claim", "c1").c.claim(token);
  assert.equal(other.status, 409);
  assert.equal(other.body.code, "limit_reached");
  assert.deepEqual(other.body.claim_ids, [res.body.claim_id]);

  const released = await c.release(res.body.claim_id);
  assert.equal(released.status, "released");
  assert.equal((await c.release(res.body.claim_id)).status, "released", "releasing twice");
  assert.deepEqual((await c.claims()).map((x) => x.status), ["released"]);
  await assert.rejects(client("claim", "mallory").c.release(res.body.claim_id), (e) => e instanceof AnteroomError && e.status === 404 && e.code === "not_found");
});

test("an aborted claim keeps its key for the next try", {skip, timeout}, async () => {
  await sale("abort");
  const {c, rec, retries} = client("abort", "a1");
  await c.join();
  const {admission_token: token} = await c.waitForTurn();
  await admin("POST", "/events/abort/pause");
  const ctl = new AbortController();
  const claimed = c.claim(token, {signal: ctl.signal});
  let answered = false;
  claimed.then(() => { answered = true; }, () => { answered = true; });
  for (const end = Date.now() + 60_000; retries.length < 1; await new Promise((ok) => setTimeout(ok, 50))) {
    assert.ok(!answered, "the claim was answered while the sale was paused: " + JSON.stringify(rec.calls));
    assert.ok(Date.now() < end, "no retry of the paused claim in 60 s: " + JSON.stringify(rec.calls));
  }
  ctl.abort(new Error("shopper left"));
  await assert.rejects(claimed, /shopper left/);
  const key = rec.calls.find((x) => x.path.endsWith("/claim")).key;
  await admin("POST", "/events/abort/resume");
  const res = await c.claim(token);
  assert.equal(res.status, 201);
  assert.equal(res.idempotencyKey, key, "the next claim took a new key");
});

test("a network error is retried; a refusal throws with its code", {skip, timeout}, async () => {
  await sale("net");
  const dead = "http://127.0.0.1:1";
  let first = true;
  const {c, retries} = client("net", "n1");
  const real = c.fetch;
  c.fetch = (url, init) => {
    if (first) { first = false; return real(url.replace(URL_, dead), init); }
    return real(url, init);
  };
  const joined = await c.join();
  assert.ok(joined.ticket);
  assert.equal(retries[0].status, 0, "a refused connection was not retried as a network error");

  const nobody = client("no-such-sale", "n1").c;
  await assert.rejects(nobody.join(), (e) => e instanceof AnteroomError && e.status === 404 && e.code === "unknown_event" && Boolean(e.body.request_id));
  // Without the caller's identity the claim is refused, and not retried.
  const {c: anon, rec} = client("net", "n1", {headers: {}});
  const res = await anon.claim("not-a-token");
  assert.equal(res.status, 401);
  assert.equal(rec.calls.length, 1);
});

// The middleware against a real anteroom node. Run by go test ./connectors
// (TestNodeMiddleware), which starts the node, admits users through real
// joins, and passes their tokens and the node's URL in the environment;
// CONTROL_URL rotates the node's signing keys on request.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createHmac } from "node:crypto";
import express from "express";
import { generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader, exportJWK } from "jose";
import { anteroom, safeReturn, JWKS_PATH } from "../src/index.mjs";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test ./connectors`);
  return v;
};
const ROOM = env("ANTEROOM_URL");
const EVENT = env("ANTEROOM_EVENT");
const ISSUER = env("ANTEROOM_ISSUER");
const AUDIENCE = env("ANTEROOM_AUDIENCE");
const GENUINE = env("TOKEN_GENUINE");
const USER = env("TOKEN_USER");
const CONTROL = env("CONTROL_URL");

const servers = [];
after(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

/** listen starts handler on a loopback port and returns its base URL. */
async function listen(handler) {
  const s = http.createServer(handler);
  servers.push(s);
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${s.address().port}`;
}

/** A proxy in front of the node's JWKS that counts fetches and can be down. */
const jwks = { hits: 0, down: false };
const jwksURL = (await listen(async (req, res) => {
  jwks.hits++;
  if (jwks.down) {
    res.writeHead(503).end();
    return;
  }
  const up = await fetch(ROOM + JWKS_PATH);
  res.writeHead(up.status, { "content-type": "application/json" }).end(await up.text());
})) + JWKS_PATH;

/** shop serves a protected app behind a middleware of opts; it records who
 * reached the app. */
async function shop(opts) {
  const seen = [];
  const logs = [];
  const mw = anteroom({ roomURL: ROOM, event: EVENT, issuer: ISSUER, audience: AUDIENCE, jwksURL, log: (m) => logs.push(m), ...opts });
  const url = await listen((req, res) => mw(req, res, () => {
    seen.push(req.anteroom.user);
    res.end(`shop as ${req.anteroom.user}`);
  }));
  return { url, seen, logs };
}

async function get(url, headers = {}) {
  const resp = await fetch(url, { headers, redirect: "manual" });
  return { status: resp.status, location: resp.headers.get("location"), cache: resp.headers.get("cache-control"), body: await resp.text() };
}
const cookie = (tok) => ({ cookie: `other=1; anteroom_a_${EVENT}=${tok}` });
const bearer = (tok) => ({ authorization: `Bearer ${tok}` });

const b64 = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const [gHead, gPayload] = GENUINE.split(".");
const kid = decodeProtectedHeader(GENUINE).kid;
const hs256 = (secret) => {
  const signing = `${b64({ alg: "HS256", kid, typ: "JWT" })}.${gPayload}`;
  return `${signing}.${createHmac("sha256", secret).update(signing).digest("base64url")}`;
};

// The shop most tests use (set up before any test is registered: a
// top-level await after that would find the runner done).
const main = await shop({ minRefetchSeconds: 1 });

/** pem is the SPKI PEM of the Ed25519 public key x (base64url). */
const pem = (x) => {
  const der = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), Buffer.from(x, "base64url")]);
  return `-----BEGIN PUBLIC KEY-----\n${der.toString("base64")}\n-----END PUBLIC KEY-----\n`;
};

test("settings are checked when the middleware is made", () => {
  assert.throws(() => anteroom({ event: EVENT }), /roomURL/);
  assert.throws(() => anteroom({ roomURL: ROOM }), /event/);
  assert.throws(() => anteroom({ roomURL: ROOM, event: "../x" }), /event/);
  assert.throws(() => anteroom({ roomURL: ROOM, event: EVENT, jwksURL: "file:///etc/passwd" }), /jwksURL/);
});

test("safeReturn takes paths on this site only", () => {
  for (const ok of ["/", "/drop/item?a=1"]) assert.equal(safeReturn(ok), true, ok);
  for (const bad of ["", "//evil.example/", "/\\evil.example", "https://evil.example/", "drop", "/a\nb", "/" + "a".repeat(2048)]) {
    assert.equal(safeReturn(bad), false, JSON.stringify(bad));
  }
});

test("a genuine admission passes as its user, by cookie or bearer, with the JWKS fetched once", async () => {
  const before = jwks.hits;
  for (const h of [cookie(GENUINE), bearer(GENUINE), cookie(GENUINE)]) {
    const r = await get(`${main.url}/drop/item`, h);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, `shop as ${USER}`);
  }
  assert.equal(jwks.hits - before, 1, "three admitted requests fetch the key set once");
  // A bad cookie does not hide a good bearer (the gate's order).
  const r = await get(`${main.url}/drop/item`, { ...cookie("junk"), ...bearer(GENUINE) });
  assert.equal(r.status, 200);
});

test("under Express, mounted on a path: the admission in res.locals, the return address the whole URL", async () => {
  const app = express();
  const seen = [];
  app.use("/drop", anteroom({ roomURL: ROOM, event: EVENT, issuer: ISSUER, audience: AUDIENCE, jwksURL }));
  app.get("/drop/item", (req, res) => {
    seen.push(req.anteroom.user);
    res.send(`express as ${res.locals.anteroom.user}`);
  });
  app.get("/free", (req, res) => res.send("free"));
  const s = app.listen(0, "127.0.0.1");
  servers.push(s);
  await new Promise((r) => s.once("listening", r));
  const url = `http://127.0.0.1:${s.address().port}`;
  let r = await get(`${url}/drop/item`, cookie(GENUINE));
  assert.deepEqual([r.status, r.body], [200, `express as ${USER}`]);
  r = await get(`${url}/drop/item?a=1`);
  assert.equal(r.status, 302);
  assert.equal(r.location, `${ROOM}/e/${EVENT}?return=%2Fdrop%2Fitem%3Fa%3D1`, "the URL the visitor asked for, not the mount's rest");
  assert.equal((await get(`${url}/free`)).body, "free", "off the mount, no check");
  assert.deepEqual(seen, [USER]);
});

test("what the app throws is not taken for a refusal: next is called once", async () => {
  const mw = anteroom({ roomURL: ROOM, event: EVENT, issuer: ISSUER, audience: AUDIENCE, jwksURL });
  let calls = 0;
  const url = await listen(async (req, res) => {
    try {
      await mw(req, res, () => {
        calls++;
        throw new Error("the app failed");
      });
    } catch {
      res.statusCode = 500;
      res.end("app error");
    }
  });
  const r = await get(`${url}/drop/item`, { ...cookie(GENUINE), ...bearer(GENUINE) });
  assert.deepEqual([r.status, calls], [500, 1]);
});

test("no token: to the waiting page, returning to this path when it is safe", async () => {
  let r = await get(`${main.url}/drop/item?a=1&b=2`);
  assert.equal(r.status, 302);
  assert.equal(r.location, `${ROOM}/e/${EVENT}?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2`);
  assert.equal(r.cache, "no-store");
  r = await get(`${main.url}//evil.example/x`);
  assert.equal(r.status, 302);
  assert.equal(r.location, `${ROOM}/e/${EVENT}`, "another site is never a return address");
});

test("forged, expired, another event's, another audience's, alg none and HS256-with-the-public-key tokens are redirected", async () => {
  const jwk = (await (await fetch(ROOM + JWKS_PATH)).json()).keys.find((k) => k.kid === kid);
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const claims = decodeJwt(GENUINE);
  const forged = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid, typ: "JWT" }).sign(privateKey);
  const { x: attackerX } = await exportJWK(publicKey);
  const embedded = await new SignJWT(claims)
    .setProtectedHeader({ alg: "EdDSA", kid, typ: "JWT", jwk: { kty: "OKP", crv: "Ed25519", x: attackerX } }).sign(privateKey);
  const tampered = `${gHead}.${b64({ ...claims, sub: "mallory" })}.${GENUINE.split(".")[2]}`;
  const bad = {
    "forged signature": forged,
    "tampered claims": tampered,
    "signed by the key it embeds (jwk header)": embedded,
    expired: env("TOKEN_EXPIRED"),
    "another event's": env("TOKEN_OTHER_EVENT"),
    "another audience's": env("TOKEN_OTHER_AUDIENCE"),
    "alg none": `${b64({ alg: "none", kid, typ: "JWT" })}.${gPayload}.`,
    "alg none, no kid": `${b64({ alg: "none" })}.${gPayload}.`,
    "HS256 keyed with the public key's bytes": hs256(Buffer.from(jwk.x, "base64url")),
    "HS256 keyed with its x": hs256(jwk.x),
    "HS256 keyed with its JWK": hs256(JSON.stringify(jwk)),
    "HS256 keyed with its PEM": hs256(pem(jwk.x)),
    "no kid": await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA" }).sign(privateKey),
    "not a JWT": "a.b.c",
  };
  for (const [what, tok] of Object.entries(bad)) {
    for (const h of [cookie(tok), bearer(tok)]) {
      const r = await get(`${main.url}/drop/item`, h);
      assert.equal(r.status, 302, `${what}: ${r.status} ${r.body}`);
      assert.match(r.location, new RegExp(`^${ROOM}/e/${EVENT}\\?return=`), what);
    }
  }
  assert.deepEqual(main.seen.filter((u) => u !== USER), [], "no refused token reached the shop");
});

test("concurrent tokens of unknown kids share one fetch", async () => {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const claims = decodeJwt(GENUINE);
  await new Promise((r) => setTimeout(r, 1100)); // past the last fetch's minRefetch
  const toks = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: `concurrent-${i}`, typ: "JWT" }).sign(privateKey)));
  const before = jwks.hits;
  const t0 = Date.now();
  const got = await Promise.all(toks.map((tok) => get(`${main.url}/drop/item`, bearer(tok))));
  assert.deepEqual(got.map((r) => r.status), toks.map(() => 302));
  // One fetch, unless a busy machine spread them past minRefetchSeconds.
  const most = 1 + Math.floor((Date.now() - t0) / 1000);
  assert.ok(jwks.hits - before >= 1 && jwks.hits - before <= most, `20 concurrent unknown kids fetched ${jwks.hits - before} times, want 1..${most}`);
});

test("tokens of unknown kids fetch the JWKS at most once per minRefetchSeconds", async () => {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const claims = decodeJwt(GENUINE);
  await new Promise((r) => setTimeout(r, 1100)); // past the last fetch's minRefetch
  const before = jwks.hits;
  const t0 = Date.now();
  for (let i = 0; i < 20; i++) {
    const tok = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: `made-up-${i}`, typ: "JWT" }).sign(privateKey);
    const r = await get(`${main.url}/drop/item`, bearer(tok));
    assert.equal(r.status, 302);
  }
  const most = 1 + Math.floor((Date.now() - t0) / 1000);
  const got = jwks.hits - before;
  assert.ok(got >= 1 && got <= most, `20 unknown kids in ${Date.now() - t0} ms fetched ${got} times, want 1..${most}`);
});

test("a key rotation on the node is picked up; the old key's tokens still pass", async () => {
  const resp = await fetch(`${CONTROL}/rotate`, { method: "POST" });
  assert.equal(resp.status, 200, await resp.clone().text());
  const { token, user } = await resp.json();
  assert.notEqual(decodeProtectedHeader(token).kid, kid, "the node signs with a new key");
  let r;
  const deadline = Date.now() + 10_000;
  do {
    r = await get(`${main.url}/drop/item`, cookie(token));
    if (r.status === 200) break;
    await new Promise((ok) => setTimeout(ok, 200));
  } while (Date.now() < deadline);
  assert.equal(r.status, 200, `a token of the rotated key: ${r.status}`);
  assert.equal(r.body, `shop as ${user}`);
  assert.equal((await get(`${main.url}/drop/item`, cookie(GENUINE))).status, 200);
});

test("a JWKS down while the cache is fresh: the cached keys still serve", async () => {
  jwks.down = true;
  try {
    assert.equal((await get(`${main.url}/drop/item`, cookie(GENUINE))).status, 200);
  } finally {
    jwks.down = false;
  }
});

test("JWKS unreachable with no cached key: fails closed (503, logged), nothing reaches the shop", async () => {
  const closed = await listen(() => {});
  servers.pop().close();
  await new Promise((r) => setTimeout(r, 50));
  for (const url of [`${closed}${JWKS_PATH}`, jwksURL]) {
    jwks.down = url === jwksURL;
    const s = await shop({ jwksURL: url });
    const r = await get(`${s.url}/drop/item`, cookie(GENUINE));
    assert.equal(r.status, 503, `${url}: ${r.status} ${r.body}`);
    assert.equal(r.cache, "no-store");
    assert.deepEqual(s.seen, []);
    assert.match(s.logs.join("\n"), /failing closed: anteroom: admission keys from http/);
    // No token at all needs no key: to the room as ever.
    assert.equal((await get(`${s.url}/drop/item`)).status, 302);
  }
  jwks.down = false;
});

test("a cached key set past refreshSeconds that cannot be renewed fails closed", async () => {
  let clock = Date.now();
  const s = await shop({ refreshSeconds: 60, now: () => clock });
  assert.equal((await get(`${s.url}/drop/item`, cookie(GENUINE))).status, 200);
  jwks.down = true;
  try {
    clock += 61_000;
    const r = await get(`${s.url}/drop/item`, cookie(GENUINE));
    assert.equal(r.status, 503, r.body);
  } finally {
    jwks.down = false;
  }
  clock += 6_000; // past minRefetch: renewed
  assert.equal((await get(`${s.url}/drop/item`, cookie(GENUINE))).status, 200);
});

// The client's pure rules: backoff and jitter. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { backoffMs, jitter } from "@anteroom/client";

const lowest = () => 0;
const highest = () => 0.999999;

test("backoff never waits less than Retry-After", () => {
  for (const ra of [1, 2, 3, 10, 59, 120, "5"]) {
    for (let strikes = 0; strikes < 20; strikes++) {
      for (const rnd of [lowest, highest, Math.random]) {
        const ms = backoffMs(ra, strikes, rnd);
        assert.ok(ms >= Number(ra) * 1000, `backoffMs(${ra}, ${strikes}) = ${ms}, under Retry-After`);
      }
    }
  }
});

test("backoff doubles with strikes and stops at a minute", () => {
  let last = 0;
  for (let strikes = 0; strikes < 8; strikes++) {
    const ms = backoffMs(0, strikes, lowest);
    assert.ok(ms >= last, `strike ${strikes}: ${ms} < ${last}`);
    last = ms;
  }
  assert.ok(backoffMs(0, 6, lowest) > 2 * backoffMs(0, 4, highest) - 1000, "no growth");
  for (let strikes = 0; strikes < 30; strikes++) {
    assert.ok(backoffMs(0, strikes, highest) <= 60000, `strike ${strikes} waits over a minute`);
  }
  // A Retry-After over a minute is still honoured.
  assert.ok(backoffMs(300, 0, highest) >= 300000);
});

test("backoff without Retry-After waits at least a second", () => {
  for (const ra of [undefined, null, "", "soon", 0, -5]) {
    assert.ok(backoffMs(ra, 0, lowest) >= 1000, `Retry-After ${ra}`);
  }
});

test("jitter stays within its spread", () => {
  assert.equal(jitter(1000, 0.1, lowest), 900);
  assert.ok(jitter(1000, 0.1, highest) < 1100);
  for (let i = 0; i < 1000; i++) {
    const ms = jitter(2000, 0.1);
    assert.ok(ms >= 1800 && ms < 2200, `jitter(2000) = ${ms}`);
  }
});

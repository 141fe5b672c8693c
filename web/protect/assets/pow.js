// pow.js: anteroom's proof-of-work solver for the browser (plain JS, no
// dependencies). A sale with a proof of work asks the joiner to find a
// nonce such that sha256(challenge + nonce) starts with `bits` zero bits;
// nonces are the decimal counter 0, 1, 2, … as in web.SolvePoW.
//
//   const h = await anteroomPoW.header("/events/drop-1");
//   // h is null when the sale asks no proof of work, else the value of
//   // the X-PoW header to send on POST /events/drop-1/join.
//
// crypto.subtle.digest is asynchronous and costs more per call than the
// hash itself, so candidates are hashed in batches awaited together.
"use strict";
(function (global) {
  const BATCH = 1024;

  function hasZeroBits(buf, bits) {
    const b = new Uint8Array(buf);
    let i = 0;
    for (; bits >= 8; bits -= 8, i++) if (b[i] !== 0) return false;
    return bits === 0 || (b[i] >> (8 - bits)) === 0;
  }

  // solve returns the first nonce (a decimal string) that solves challenge.
  async function solve(challenge, bits) {
    const enc = new TextEncoder();
    for (let base = 0; ; base += BATCH) {
      const sums = [];
      for (let n = base; n < base + BATCH; n++) {
        sums.push(crypto.subtle.digest("SHA-256", enc.encode(challenge + n)));
      }
      const done = await Promise.all(sums);
      for (let k = 0; k < BATCH; k++) {
        if (hasZeroBits(done[k], bits)) return String(base + k);
      }
    }
  }

  // header fetches a challenge for the event at base ("/events/ID") and
  // returns the solved X-PoW value, or null when none is required.
  async function header(base, headers) {
    const r = await fetch(base + "/challenge", {headers: headers || {}, credentials: "same-origin"});
    if (!r.ok) return null;
    const j = await r.json();
    if (!j.required) return null;
    return j.challenge + ":" + (await solve(j.challenge, j.bits));
  }

  global.anteroomPoW = {solve: solve, header: header};
})(window);

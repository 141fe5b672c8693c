// room.js — the waiting room's runtime. The page (the built-in one or an
// operator's template) renders the first view on the server and puts this
// script's input in <script type="application/json" id="ar-page">: the
// event id, the language and its messages, the switcher's languages, and in
// a console preview a sample state to show instead of asking the API.
// The script keeps the elements with the documented ids (README, "The
// waiting room page") up to date; a template may leave any of them out.
"use strict";
const PAGE = JSON.parse(document.getElementById("ar-page").textContent);
const ghosts = {};
// $ finds an element by id; a page without it gets a detached stand-in.
const $ = (id) => document.getElementById(id) || (ghosts[id] = ghosts[id] || document.createElement("div"));
const PV = PAGE.preview || null;
const store = {get(k) { try { return localStorage.getItem(k); } catch (e) { return null; } },
  set(k, v) { try { localStorage.setItem(k, v); } catch (e) { /* private mode */ } },
  del(k) { try { localStorage.removeItem(k); } catch (e) { /* private mode */ } }};
// An unknown sale's page is shared by every id: the id is then the address's.
const ev = PAGE.event || decodeURIComponent(location.pathname.replace(/\/+$/, "").split("/").pop());
const base = "/events/" + encodeURIComponent(ev);
const K = (n) => "anteroom_" + n + "_" + ev;
const P = (iso) => Date.parse(iso);
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const rnd = (n) => hex(crypto.getRandomValues(new Uint8Array(n)));
// The page talks to the server through the client library that apps use
// too (/assets/anteroom.js): its requests (one in flight), retry rules and
// claim Idempotency-Key. step() waits for it before the first request; the
// inline rules and a plain fetch stand in only if it cannot load.
let lib = null, client = null;
const libReady = import("/assets/anteroom.js").then((x) => {
  lib = x;
  client = new x.Anteroom(ev, {storage: {getItem: store.get, setItem: store.set, removeItem: store.del}, timeoutMs: 15000});
}, () => {});
const jit = (ms, a) => lib ? lib.jitter(ms, a) : ms * (1 - a + 2 * a * Math.random());
const load = (k) => { if (PV) return null; try { return JSON.parse(store.get(K(k)) || "null"); } catch (e) { return null; } };
const save = (k, v) => { if (!PV) { if (v) store.set(K(k), JSON.stringify(v)); else store.del(K(k)); } };
// ?return= (set by the shop's gateway, deploy/gateway/nginx.conf) sends an
// admitted visitor back to the shop page they asked for: a path on this site
// only, the rule of the server's SafeReturn; anything else is ignored.
const back = ((r) => r && r.length <= 2048 && /^\/(?![\/\\])[^\\\x00-\x1f\x7f]*$/.test(r) ? r : null)(new URLSearchParams(location.search).get("return"));
// The page never names the caller: the server does, by its visitor cookie
// (anonymous mode) or by what the shop's gateway adds (header or jwt mode).
// The server chose the language (?lang=, the switcher's cookie, then
// Accept-Language); the switcher changes it without a reload.
let lang = PAGE.lang, tag = PAGE.tag, M = PAGE.messages;
const m = window.anteroom = {};
let info = null, offset = 0, bestRtt = Infinity, evCount = 0, unknown = false;
let me = load("me"), res = load("res"), st = null, stAt = 0, tok = null, tokExp = 0;
let notice = null, maxAhead = 0, busy = false, timer = 0, fails = 0, strikes = 0, clTries = 0, joining = false, claiming = false, hashOk = null;
let said = "", saidKey = "", saidAt = 0, pow = null, powTries = 0, captcha = null, capTries = 0;
const due = {jn: Infinity, cm: Infinity, st: me && !res ? 0 : Infinity, cl: res && res.k === "granted" && res.status === "pending" ? 0 : Infinity, ev: 0};
const now = () => Date.now() + offset;

function t(k, v) {
  let s = M[k] || k;
  for (const x in v || {}) s = s.split("{" + x + "}").join(v[x]);
  return s;
}
function clock(ts) { return new Date(ts).toLocaleTimeString(tag === "en" ? "en-GB" : tag, {hour: "2-digit", minute: "2-digit", second: "2-digit"}); }
function hms(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000)), d = Math.floor(s / 86400), p = (n) => String(n).padStart(2, "0");
  const body = p(Math.floor(s / 3600) % 24) + ":" + p(Math.floor(s / 60) % 60) + ":" + p(s % 60);
  return d ? d + t("day") + body : body;
}
function etaText(sec) {
  const mins = Math.ceil(sec / 60);
  if (sec < 60) return t("etaLt");
  return mins < 60 ? t("etaMin", {m: mins}) : t("etaH", {h: Math.floor(mins / 60), m: mins % 60});
}
// retryMs backs off after a 429 or 503: at least Retry-After, doubling
// while the answers keep coming, with jitter so a crowd does not return in
// lockstep.
function retryMs(r, j) {
  const ra = Number(r.headers.get("Retry-After")) || j.retry_after_seconds || 1;
  if (lib) return lib.backoffMs(ra, strikes++);
  return Math.min(jit(Math.max(ra * 1000, 500 * 2 ** Math.min(strikes++, 6)), 0.15) + 250, 60000);
}

// One request at a time: every call goes through step(), which runs the
// most urgent due task, then plans the next.
async function api(method, path, opt) {
  opt = opt || {};
  const h = opt.h || {};
  const t0 = performance.now(), d0 = Date.now();
  let r, j = {};
  if (client && path.startsWith(base)) {
    // A request that hangs must not freeze the page: the library gives up
    // after 15 s, and step() backs off like after a network error.
    const a = await client.request(method, path.slice(base.length), h, {cache: opt.cache || "default"});
    r = {ok: a.status >= 200 && a.status < 300, status: a.status, headers: a.headers};
    j = a.body;
  } else {
    const signal = AbortSignal.timeout ? AbortSignal.timeout(15000) : undefined;
    r = await fetch(path, {method: method, headers: h, credentials: "same-origin", cache: opt.cache || "default", signal: signal});
    try { j = await r.json(); } catch (e) { /* empty body */ }
  }
  if (r.ok) strikes = 0;
  return {r: r, j: j || {}, rtt: performance.now() - t0, d0: d0};
}
async function step() {
  if (busy) return;
  busy = true;
  clearTimeout(timer);
  await libReady;
  const tasks = [["jn", join], ["cm", claim], ["st", status], ["cl", claimStatus], ["ev", refresh]];
  const task = tasks.find((x) => due[x[0]] <= Date.now());
  if (task) {
    due[task[0]] = Infinity;
    try {
      await task[1]();
      fails = 0;
    } catch (e) {
      fails++;
      const d = jit(Math.min(1000 * 2 ** fails, 30000), 0.2);
      due[task[0]] = Date.now() + d;
      notice = {k: "offline", s: Math.ceil(d / 1000)};
    }
  }
  busy = false;
  const next = Math.min(due.jn, due.cm, due.st, due.cl, due.ev);
  if (next < Infinity) timer = setTimeout(step, Math.max(0, next - Date.now()));
  render();
}
function kick(k) { if (!PV) { due[k] = 0; step(); } }

async function refresh() {
  const fresh = evCount++ < 3 || evCount % 12 === 0;
  const {r, j, rtt, d0} = await api("GET", base, {cache: fresh ? "no-store" : "default"});
  if (r.status === 404) { unknown = true; return; }
  if (!r.ok) { due.ev = Date.now() + retryMs(r, j); return; }
  if (fresh && rtt < bestRtt) { bestRtt = rtt; offset = P(j.server_time) - (d0 + rtt / 2); }
  info = j;
  autoJoin();
  if (me && st && !res) {
    const moved = st.state === "waiting" && st.position && j.admitted >= st.position;
    const changed = j.state === "sold_out" || j.state === "closed" || j.paused !== (st.state === "paused") || !!j.closed !== (st.state === "closed") || (st.state === "prequeue" && j.window_size != null);
    if (moved || changed) due.st = Math.min(due.st, Date.now() + 150);
  }
  const soon = now() > P(j.prequeue_opens_at) - 600000;
  const done = (res || j.state === "closed") && (j.seed || j.state === "closed");
  due.ev = done ? Infinity : Date.now() + jit(soon ? (me ? 4000 : 5000) : 30000, 0.2);
}
// autoJoin joins a safety-net room by itself: it guards a whole site, and
// the visitor came here from its gate (again once an admission ended), so
// there is no button to press. At most a few times per page load.
let autoJoins = 0;
function autoJoin() {
  if (!info || info.mode !== "safety_net" || info.state !== "open" || me || res || joining || autoJoins >= 3) return;
  autoJoins++;
  joining = true;
  due.jn = Date.now();
}
// loadPow loads the proof-of-work solver, only for sales that ask for it.
function loadPow() {
  return window.anteroomPoW ? Promise.resolve() : new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = "/assets/pow.js";
    s.onload = ok;
    s.onerror = () => fail(new Error("pow.js"));
    document.head.appendChild(s);
  });
}
// An invite link (/e/{id}?invite=…, from `anteroom invite`) is sent on join:
// it admits to an invite-only sale and may put its holder in a lane.
const invite = ((v) => v && /^[A-Za-z0-9._-]{1,128}$/.test(v) ? v : null)(new URLSearchParams(location.search).get("invite"));
// loadScript loads a same-origin helper script once.
function loadScript(src, name) {
  return window[name] ? Promise.resolve() : new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = ok;
    s.onerror = () => fail(new Error(src));
    document.head.appendChild(s);
  });
}
// captchaBox is where the captcha widget goes: the page's #captchaBox, or
// one added after the join button (an operator's template may lack it).
function captchaBox() {
  // Not $(): its detached stand-in would hide the widget from the visitor.
  let box = document.getElementById("captchaBox");
  if (!box) {
    box = document.createElement("div");
    box.id = "captchaBox";
    const b = $("join");
    if (b && b.parentNode) b.parentNode.insertBefore(box, b.nextSibling); else document.body.appendChild(box);
  }
  return box;
}
async function join() {
  joining = true;
  try {
    const h = {};
    if (pow) h["X-PoW"] = pow;
    if (captcha) h["X-Captcha"] = captcha;
    if (invite) h["X-Invite-Token"] = invite;
    captcha = null; // a captcha token is good for one join
    const {r, j} = await api("POST", base + "/join", {h});
    if ((j.code === "captcha_required" || j.code === "captcha_failed") && info && info.captcha && capTries++ < 3) {
      await loadScript("/assets/captcha.js", "anteroomCaptcha");
      const box = captchaBox();
      captcha = await window.anteroomCaptcha.token(info.captcha, box);
      box.hidden = true;
      due.jn = Date.now();
      return;
    }
    if (j.code === "pow_required" && powTries++ < 3) {
      notice = {k: "pow"};
      render();
      await loadPow();
      pow = await window.anteroomPoW.header(base);
      notice = null;
      due.jn = Date.now();
      return;
    }
    if (r.ok) {
      me = {seq: j.seq};
      save("me", me);
      notice = null;
      m.joined = performance.now();
      applyStatus(j);
      return;
    }
    if (j.code === "not_open" || r.status === 429 || r.status === 503) {
      const d = retryMs(r, j);
      due.jn = Date.now() + d;
      notice = {k: j.code === "not_open" ? "notOpen" : j.code === "closed" ? "roomClosed" : j.code === "rate_limited" || j.code === "paused" ? j.code : "degraded", s: Math.ceil(d / 1000)};
      if (j.code === "closed") due.ev = 0; // read the closure's message
      return;
    }
    if (j.code === "forbidden") { res = {k: "joinClosed"}; return; }
    notice = {k: "error", d: j.detail || "HTTP " + r.status};
  } finally {
    joining = due.jn < Infinity;
  }
}
function applyStatus(j) {
  st = j;
  stAt = Date.now();
  if (j.state !== "paused" && notice && notice.k === "paused") notice = null;
  if (j.state === "waiting") maxAhead = Math.max(maxAhead, j.ahead || 0);
  // A room staff closed answers closed too, but keeps everyone's place:
  // not the end (closed_by says which).
  if (j.state === "closed" && j.closed_by === "staff") {
    if (!info || !info.closed) due.ev = 0; // read the message
    due.st = Date.now() + jit(j.poll_after_ms || 30000, 0.1);
    return;
  }
  const terminal = ["sold_out", "not_selected", "closed"].includes(j.state);
  if (terminal && !(res && res.k === "granted")) { res = {k: j.state}; due.st = Infinity; return; }
  if (j.state === "admitted" && j.admission_token) {
    tok = j.admission_token;
    const exp = P(j.admission_expires_at);
    tokExp = Number.isNaN(exp) ? Date.now() + 60000 : exp - offset;
    due.st = Math.max(tokExp - 30000, Date.now() + 5000);
    // The status answer also set the admission cookie the gateway reads.
    if (back) location.replace(back);
    return;
  }
  if (j.state === "paused") notice = {k: "paused"};
  // A join answer has no ahead or ETA yet: ask for the full status now.
  due.st = Date.now() + (j.eta_seconds == null ? 100 : jit(j.poll_after_ms || 5000, 0.1));
}
async function status() {
  const {r, j} = await api("GET", base + "/status");
  if (r.ok) { notice = null; applyStatus(j); return; }
  if (r.status === 401) { me = null; st = null; save("me", null); autoJoin(); return; }
  const d = retryMs(r, j);
  due.st = Date.now() + d;
  notice = {k: j.code === "closed" ? "roomClosed" : j.code === "paused" || j.code === "rate_limited" || j.code === "degraded" ? j.code : "error", s: Math.ceil(d / 1000), d: j.detail};
}
async function claim() {
  claiming = true;
  try {
    // One key for every retry of this claim, kept across reloads.
    let key = client ? client.idempotencyKey() : store.get(K("idem"));
    if (!key) { key = "page-" + rnd(12); store.set(K("idem"), key); }
    const {r, j} = await api("POST", base + "/claim", {h: {"Authorization": "Bearer " + tok, "Idempotency-Key": key}});
    if (client && (r.ok || j.code === "sold_out" || j.code === "limit_reached")) client.forgetKey();
    if (r.ok) {
      res = {k: "granted", id: j.claim_id, status: j.status};
      save("res", res);
      notice = null;
      due.st = Infinity;
      due.cl = Date.now() + 1000;
      return;
    }
    switch (j.code) {
    case "sold_out": res = {k: "sold_out"}; due.st = Infinity; notice = null; break;
    case "limit_reached": res = {k: "limit_reached", ids: j.claim_ids || []}; save("res", res); due.st = Infinity; notice = null; break;
    case "paused": case "degraded": case "rate_limited": case "closed": {
      const d = retryMs(r, j);
      notice = {k: j.code === "closed" ? "roomClosed" : j.code, s: Math.ceil(d / 1000)};
      if (j.code === "closed") due.ev = 0;
      due.cm = Date.now() + d;
      break;
    }
    case "unauthenticated": tok = null; notice = {k: "expired"}; due.st = 0; break;
    default: notice = {k: "error", d: j.detail || "HTTP " + r.status};
    }
  } finally {
    claiming = due.cm < Infinity;
  }
}
async function claimStatus() {
  const {r, j} = await api("GET", base + "/claims/" + encodeURIComponent(res.id));
  if (!r.ok) { due.cl = Date.now() + retryMs(r, j); return; }
  res.status = j.status;
  save("res", res);
  if (j.status === "pending") due.cl = Date.now() + jit(Math.min(1000 * 2 ** Math.min(clTries++, 4), 10000), 0.2);
}
function txt(id, s) { const e = $(id); if (e.textContent !== String(s)) e.textContent = s; }
function show(id, on) { $(id).hidden = !on; }
function box(id, kind, cls, main, sub) {
  const e = $(id);
  e.hidden = !kind;
  if (!kind) return;
  e.className = "msg " + cls;
  e.dataset.kind = kind;
  const html = main + "\n" + (sub || "");
  if (e.dataset.v === html) return;
  e.dataset.v = html;
  e.textContent = main;
  if (sub) { const s = document.createElement("small"); s.textContent = sub; e.appendChild(s); }
}
// announce speaks through the live region (#live, the page's only one): at
// once when the kind of news changes (joined, admitted, paused, a result),
// at most every announceMs while only the numbers move, so a screen reader
// is not read every poll; a result (key "r:…") is announced once.
const announceMs = 30000, results = {};
function announce(s, key) {
  if (!s || s === said || results[key] || (key === saidKey && Date.now() - saidAt < announceMs)) return;
  said = s; saidKey = key; saidAt = Date.now();
  if (key.startsWith("r:")) results[key] = true;
  $("live").textContent = s;
}
// Calling the shopper back, so they can leave the tab. When their turn
// comes (the admission this page sees first) the title and the icon
// change, and as the shopper chose on this page: a short sound (off by
// default; turning it on is the click that lets it play, and plays a
// sample) and, while the tab is hidden, a notification (permission asked
// only on the button's click). With Web Push on (GET /events/{id}/push
// answers a key) the button also subscribes this browser, so the notice
// comes even when the tab is throttled or closed: /assets/push-sw.js
// shows it, with the same tag, so one replaces the other.
const cb = {notify: store.get(K("notify")) === "1", sound: store.get(K("sound")) === "1", called: false, msg: "", audio: null, icon: null};
const turnIcon = "data:image/svg+xml," + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="8" fill="#0a6b2c"/><path d="M4 8.5l2.5 2.5L12 5.5" stroke="#fff" stroke-width="2" fill="none"/></svg>');
function turnTitle() { return "✓ " + t("turnTitle") + " — " + ((info && info.name) || ev); }
function setIcon(on) {
  let l = document.querySelector('link[rel~="icon"]');
  if (!l) { l = document.createElement("link"); l.rel = "icon"; document.head.appendChild(l); }
  if (cb.icon === null) cb.icon = l.getAttribute("href") || "data:,";
  const want = on ? turnIcon : cb.icon;
  if (l.getAttribute("href") !== want) l.setAttribute("href", want);
}
// audio makes the sound's player, on a click (browsers let a page play
// sound only after one).
function audio() {
  const A = window.AudioContext || window.webkitAudioContext;
  if (!cb.audio && A) { try { cb.audio = new A(); } catch (e) { cb.audio = null; } }
  return cb.audio;
}
function beep() {
  const a = cb.audio;
  if (!a) return;
  try {
    if (a.state === "suspended") a.resume();
    for (const d of [0, 0.25]) {
      const o = a.createOscillator(), g = a.createGain();
      o.frequency.value = 880;
      g.gain.value = 0.15;
      o.connect(g);
      g.connect(a.destination);
      o.start(a.currentTime + d);
      o.stop(a.currentTime + d + 0.15);
    }
    m.beeps = (m.beeps || 0) + 1;
  } catch (e) { /* no sound */ }
}
function callBack() {
  if (cb.called || PV) return;
  cb.called = true;
  m.turn = performance.now();
  if (cb.sound) beep();
  if (!cb.notify || !document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  const title = turnTitle(), opt = {body: t("turnBody", {t: clock(tokExp + offset)}), tag: "anteroom-turn-" + ev, requireInteraction: true};
  try {
    const n = new Notification(title, opt);
    n.onclick = () => { window.focus(); n.close(); };
  } catch (e) {
    // Where a page may not make one (Android), the worker shows it.
    if (navigator.serviceWorker) navigator.serviceWorker.getRegistration("/e/").then((r) => r && r.showNotification(title, opt), () => {});
  }
}
async function subscribePush() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) return;
  try {
    const r = await fetch(base + "/push", {credentials: "same-origin"});
    if (!r.ok) return; // Web Push is off on this node
    const key = (await r.json()).public_key;
    const reg = await navigator.serviceWorker.register("/assets/push-sw.js", {scope: "/e/"});
    const raw = atob(key.replace(/-/g, "+").replace(/_/g, "/"));
    const sub = await reg.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: Uint8Array.from(raw, (c) => c.charCodeAt(0))});
    const body = Object.assign(sub.toJSON(), {title: turnTitle(), body: t("turnPush")});
    const a = await fetch(base + "/push", {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    m.pushed = a.ok;
  } catch (e) { /* no push service reachable: the page's own notice remains */ }
}
// renderCallback shows the choices while the shopper waits and calls them
// back once admitted; it returns whether it is their turn.
function renderCallback() {
  const turn = !!(st && st.state === "admitted" && !res);
  show("callback", !!(me && st && !res && ["prequeue", "waiting", "paused"].includes(st.state)));
  show("notifyBtn", "Notification" in window);
  $("notifyBtn").setAttribute("aria-pressed", String(cb.notify));
  $("soundBtn").setAttribute("aria-pressed", String(cb.sound));
  show("cbMsg", !!cb.msg);
  txt("cbMsg", cb.msg ? t(cb.msg) : "");
  if (turn) callBack();
  setIcon(turn);
  return turn;
}
function render() {
  const root = document.documentElement;
  if (root.lang !== tag) root.lang = tag;
  const dir = PAGE.rtl.includes(lang) ? "rtl" : "ltr";
  if (root.dir !== dir) root.dir = dir;
  const ps = res ? res.k : st ? st.state : "";
  if (root.dataset.state !== ps) root.dataset.state = ps;
  for (const e of document.querySelectorAll("[data-t]")) txt2(e, t(e.dataset.t));
  for (const e of document.querySelectorAll("[data-t-aria]")) if (e.getAttribute("aria-label") !== t(e.dataset.tAria)) e.setAttribute("aria-label", t(e.dataset.tAria));
  // Nothing is joined before the sale is known: an operator's template's
  // button may come enabled, and a join's captcha needs info.captcha.
  if (unknown || !info) $("join").disabled = true;
  if (unknown) { txt("name", t("unknown")); show("clock", false); return; }
  if (!info) { txt("name", t("loading")); return; }
  const turn = renderCallback(), title = turn ? turnTitle() : info.name + " · " + t("title");
  if (document.title !== title) document.title = title;
  txt("name", info.name || info.id);
  const lot = info.mode === "lottery", n = now();
  const opens = P(info.prequeue_opens_at), starts = P(info.starts_at), wend = P(info.window_closes_at), ends = P(info.ends_at);
  // A safety-net room sells nothing: its line says first come, first served.
  if (info.mode === "safety_net") txt("meta", t("fcfs")); else txt("meta", [lot ? t("lottery") : wend > starts ? t("fcfsWin", {n: Math.round((wend - starts) / 1000)}) : t("fcfs"), t(info.supply === 1 ? "unit" : "units", {n: info.supply, l: info.per_user_limit}), t("left", {n: info.remaining})].join(" · "));
  const w = clock(wend);
  let label = "ended", target = 0;
  if (n < opens) { label = "opensIn"; target = opens; } else if (n < starts) { label = lot ? "regClosesIn" : "startsIn"; target = starts; } else if (!lot && n < wend) { label = "windowIn"; target = wend; } else if (n < ends) { label = "endsIn"; target = ends; }
  txt("cdLabel", t(label));
  txt("cd", target ? hms(target - n) : "—");
  let ph = "phOpen";
  if (info.state === "sold_out") ph = "phSold"; else if (info.state === "closed" || n >= ends) ph = "phClosed"; else if (info.closed) ph = "phRoomClosed"; else if (info.paused) ph = "phPaused";
  else if (n < opens) ph = lot ? "phUpLot" : "phUp"; else if (lot) ph = n < starts ? "phLot" : "phLotDone"; else if (n < wend) ph = "phFcfs";
  txt("phase", t(ph, {t: clock(opens), w: w}));
  const joinEnd = lot ? starts : ends;
  const canJoin = !res && !info.closed && info.state !== "sold_out" && info.state !== "closed" && n >= opens && n < joinEnd;
  show("join", !me);
  txt("join", joining ? t("joining") : lot ? t("register") : t("join"));
  $("join").disabled = !canJoin || joining;
  txt("joinNote", !me && n < opens ? t("opensAt", {t: clock(opens)}) : "");
  const q = renderQueue(lot, w), r = renderResult();
  if (r) announce(r[0], r[1]); else if (q) announce(q[0], q[1]);
  renderFair(w);
}
// closedText is the message of staff's closure, or the default one.
function closedText() { return info.closed.message || t("roomClosed"); }
function txt2(e, s) { if (e.textContent !== s) e.textContent = s; }
function renderQueue(lot, w) {
  show("queue", !!(me && st));
  if (!me || !st) return;
  const s = st.state === "prequeue" && lot ? "prequeueLot" : st.state === "closed" && st.closed_by === "staff" ? "roomClosed" : st.state;
  txt("state", t("st_" + s));
  const queued = st.state === "waiting" || st.state === "paused" || s === "roomClosed";
  let ahead = st.ahead;
  if (queued && st.position) {
    const est = Math.max(st.position - info.admitted - 1, 0);
    ahead = ahead == null ? est : Math.min(ahead, est);
  }
  const eta = Math.max(0, st.eta_seconds - (Date.now() - stAt) / 1000);
  txt("pos", st.position || "—");
  txt("ahead", queued ? ahead : st.state === "admitted" ? 0 : "—");
  txt("eta", (st.state === "prequeue" || st.state === "waiting") && st.eta_seconds != null ? etaText(eta) : "—");
  if (st.position && !m.firstPosition) m.firstPosition = performance.now();
  let pct = 0;
  if (st.state === "admitted" || (res && res.k === "granted")) pct = 100; else if (queued && maxAhead > 0) pct = Math.round(100 * (maxAhead - ahead) / maxAhead);
  $("fill").style.width = pct + "%";
  $("bar").setAttribute("aria-valuenow", pct);
  const note = {prequeue: "q_prequeue", prequeueLot: "q_prequeueLot", waiting: "q_waiting", paused: "q_paused", roomClosed: "q_roomClosed", admitted: "q_admitted"}[s];
  // Admitted: the time the admission is held for, counting down.
  const held = s === "admitted" && tokExp ? " " + t("held", {r: hms(tokExp - Date.now())}) : "";
  txt("qNote", note && !res ? t(note, {w: w, t: clock(tokExp + offset)}) + held : "");
  show("claim", st.state === "admitted" && !res && info.mode !== "safety_net"); // a safety-net room sells nothing
  txt("claim", claiming ? t("claiming") : t("claim"));
  $("claim").disabled = claiming || !tok;
  return [t("st_" + s) + (st.position ? ". " + t("pos") + " " + st.position + (queued ? ", " + t("ahead") + " " + ahead : "") : ""), "q:" + s];
}
function renderResult() {
  const k = res ? res.k : me ? null : info.state === "sold_out" || info.state === "closed" ? info.state : null;
  const cls = {granted: "ok", sold_out: "bad", not_selected: "bad", limit_reached: "warn", closed: "info", joinClosed: "info"}[k];
  const cs = res && M["cs_" + res.status] ? t("cs_" + res.status) : res && res.status;
  if (k === "granted") box("result", k, cls, t("granted"), t("grantedId", {id: res.id}) + " · " + cs);
  else if (k === "limit_reached") box("result", k, cls, t(k), t("limitIds", {ids: (res.ids || []).join(", ")}));
  else if (!k && info.closed) {
    // Closed by staff: their message (plain text), or the default one.
    const u = info.closed.until ? P(info.closed.until) : NaN;
    box("result", "roomClosed", "info", closedText(), Number.isNaN(u) ? "" : t("roomClosedUntil", {t: new Date(u).toLocaleString(tag, {dateStyle: "medium", timeStyle: "short"})}));
  } else box("result", k, cls, k ? t(k) : "");
  const nk = notice && notice.k, nt = nk ? t(nk, {s: notice.s, d: notice.d}) : "";
  box("notice", nk, nk === "error" ? "bad" : nk === "notOpen" || nk === "expired" || nk === "pow" ? "info" : "warn", nt);
  if (k) return [t(k) + (k === "granted" ? " " + cs : ""), "r:" + k];
  if (info.closed && !nk) return [closedText(), "c:roomClosed"];
  return nk ? [nt, "n:" + nk] : null;
}
// ordering returns what orders the holder of seq: the event's window, or
// for a lane member (seq = lane × 2^40 + n, lanes listed in order from 1)
// the lane's own window over their number n within the lane.
function ordering(seq) {
  const L = 2 ** 40, li = seq ? Math.floor(seq / L) : 0;
  if (!li) return {w: info.window_size, n: seq, lane: ""};
  const l = (info.lanes || [])[li - 1];
  return {w: l ? l.window_size : null, n: seq % L, lane: l ? l.name : "", li: li};
}
function renderFair(w) {
  txt("fairIntro", t(info.mode === "lottery" ? "fairIntroLot" : "fairIntro"));
  txt("commit", info.seed_commitment);
  const open = !!info.seed;
  show("reveal", open);
  txt("later", open ? "" : t("later", {w: w}));
  if (!open) return;
  const f = ordering(me && me.seq), seq = f.n;
  txt("seed", info.seed);
  txt("w", f.w == null ? "—" : f.lane ? f.w + " (" + f.lane + ")" : f.w);
  txt("seq", seq || "—");
  // A lane of an event with lane seeds draws with its own (queue.LaneSeed).
  const ls = f.li && info.lane_seeds ? " --lane-seed " + f.li : "";
  txt("cmd", "anteroom verify --seed " + info.seed + ls + " --window " + f.w + " --seq " + (seq || "N"));
  show("verify", f.w > 0);
  if (hashOk === null && crypto.subtle) {
    hashOk = "…";
    const b = new Uint8Array(info.seed.match(/../g).map((x) => parseInt(x, 16)));
    crypto.subtle.digest("SHA-256", b).then((d) => { hashOk = hex(new Uint8Array(d)) === info.seed_commitment; });
  }
  const note = f.w == null ? "" : !f.w ? t("noWindow") : seq && seq > f.w ? t("after") : "";
  txt("hash", ((hashOk === true ? t("hashOk") : hashOk === false ? t("hashBad") : "") + " " + note).trim());
}
// The switcher (a <select id="lang">) loads the chosen catalog, with the
// event's copy, and keeps the choice in a cookie the server reads next time.
$("lang").onchange = async (e) => {
  const code = e.target.value;
  if (PV) { const u = new URL(location.href); u.searchParams.set("lang", code); location.replace(u.href); return; }
  try {
    const r = await fetch("/e/" + encodeURIComponent(ev) + "/messages?lang=" + encodeURIComponent(code), {credentials: "same-origin"});
    if (!r.ok) return;
    const j = await r.json();
    lang = j.lang; tag = j.tag; M = j.messages;
    if (!PV) document.cookie = "anteroom_lang=" + lang + "; path=/; max-age=31536000; SameSite=Lax";
  } catch (err) { return; }
  render();
};
$("join").onclick = () => { m.joinClick = performance.now(); joining = true; render(); kick("jn"); };
$("claim").onclick = () => { claiming = true; render(); kick("cm"); };
$("notifyBtn").onclick = async () => {
  if (cb.notify) { cb.notify = false; store.del(K("notify")); render(); return; }
  let p = "denied";
  if ("Notification" in window) {
    p = Notification.permission;
    if (p !== "granted") { try { p = await Notification.requestPermission(); } catch (e) { p = "denied"; } }
  }
  cb.msg = p === "granted" ? "" : "notifyDenied";
  if (p === "granted") { cb.notify = true; store.set(K("notify"), "1"); subscribePush(); }
  render();
};
$("soundBtn").onclick = () => {
  cb.sound = !cb.sound;
  if (cb.sound) { store.set(K("sound"), "1"); audio(); beep(); } else store.del(K("sound"));
  render();
};
// A sound chosen before a reload plays only after the next click here.
document.addEventListener("click", () => { if (cb.sound) audio(); }, {once: true});
if (PV) {
  // A console preview: a sample of one state, no requests.
  info = PV.event; me = PV.me; st = PV.status; res = PV.res; notice = PV.notice; stAt = Date.now();
  if (st && st.admission_token) { tok = st.admission_token; tokExp = P(st.admission_expires_at); }
  if (st && st.state === "waiting") maxAhead = PV.max_ahead || st.ahead;
  for (const k in due) due[k] = Infinity;
  render();
} else {
  render();
  step();
}
setInterval(render, 250);

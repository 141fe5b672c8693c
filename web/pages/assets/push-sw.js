// push-sw.js — the waiting room's service worker (scope /e/). It does one
// thing: show the "your turn" notice a Web Push message brings (package
// push: {type, event, url, title, body}, decrypted by the browser), and on
// a click focus the sale's open page or open it. It caches nothing and
// handles no fetch.
"use strict";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("push", (e) => {
  let m = {};
  try { m = e.data ? e.data.json() : {}; } catch (err) { m = {}; }
  if (m.type !== "your_turn" || !/^[A-Za-z0-9_-]{1,64}$/.test(m.event || "")) return;
  const url = "/e/" + encodeURIComponent(m.event);
  // The same tag as the page's own notice: one replaces the other.
  e.waitUntil(self.registration.showNotification(String(m.title || "✓ It's your turn"), {
    body: String(m.body || ""), tag: "anteroom-turn-" + m.event, renotify: true,
    requireInteraction: true, data: {url: url},
  }));
});
self.addEventListener("notificationclick", (e) => {
  e.notification.close();
  const url = (e.notification.data && e.notification.data.url) || "/";
  e.waitUntil(self.clients.matchAll({type: "window", includeUncontrolled: true}).then((all) => {
    for (const c of all) if (new URL(c.url).pathname === url && "focus" in c) return c.focus();
    return self.clients.openWindow(url);
  }));
});

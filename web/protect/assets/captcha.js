// captcha.js: shows a sale's hosted captcha (Cloudflare Turnstile or
// hCaptcha) and yields its token for join's X-Captcha header. Loaded only
// for sales that ask for one; the page's CSP then allows the provider's
// script and frame origins.
//
//   const token = await anteroomCaptcha.token(info.captcha, box);
//   // info.captcha is {provider, site_key} from GET /events/{id}; box is
//   // the element the widget is drawn in. Each token is good for one join.
"use strict";
(function (global) {
  const SRC = {
    turnstile: ["https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit", "turnstile"],
    hcaptcha: ["https://js.hcaptcha.com/1/api.js?render=explicit", "hcaptcha"]
  };
  const loaded = {};
  function load(provider) {
    const [src, name] = SRC[provider] || [];
    if (!src) return Promise.reject(new Error("unknown captcha provider " + provider));
    if (global[name]) return Promise.resolve(global[name]);
    loaded[provider] = loaded[provider] || new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = src;
      s.async = true;
      s.onload = () => {
        // Both APIs may finish setting up just after the script runs.
        const wait = (n) => global[name] ? ok(global[name]) : n > 0 ? setTimeout(() => wait(n - 1), 50) : fail(new Error(provider + " did not load"));
        wait(100);
      };
      s.onerror = () => { delete loaded[provider]; fail(new Error(provider + " could not be loaded")); };
      document.head.appendChild(s);
    });
    return loaded[provider];
  }
  let widget = null;
  async function token(cfg, box) {
    const api = await load(cfg.provider);
    box.hidden = false;
    return new Promise((ok, fail) => {
      const opts = {sitekey: cfg.site_key, callback: (t) => ok(t), "error-callback": () => fail(new Error("captcha error")), "expired-callback": () => fail(new Error("captcha expired"))};
      if (widget !== null) {
        box.replaceChildren();
        widget = null;
      }
      widget = api.render(box, opts);
    });
  }
  global.anteroomCaptcha = {token};
})(window);

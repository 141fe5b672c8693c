// serve.mjs runs the Worker locally in miniflare (workerd, the runtime of
// Cloudflare Workers) as wrangler.toml describes it: its main,
// compatibility_date and [vars], each var overridden by the JSON object in
// WORKER_VARS. WORKER_UPSTREAM, when set, stands for the zone's origin (the
// URL requests appear to be for). It prints one JSON line, {"url": ...},
// where the Worker listens, passes the Worker's log to stderr, and stops
// when its standard input closes.
//
//   WORKER_VARS='{"ANTEROOM_URL":"http://127.0.0.1:8080"}' WORKER_UPSTREAM=http://127.0.0.1:3000 npm run serve
//
// internal/node TestCloudflareWorker drives the Worker through it.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..");
const conf = wranglerToml(readFileSync(join(dir, "wrangler.toml"), "utf8"));
const vars = { ...conf.vars, ...JSON.parse(process.env.WORKER_VARS || "{}") };

const mf = new Miniflare({
  modules: true,
  modulesRules: [{ type: "ESModule", include: ["**/*.js"] }], // as wrangler bundles src/
  scriptPath: join(dir, conf.main),
  compatibilityDate: conf.compatibility_date,
  bindings: vars,
  host: "127.0.0.1",
  port: 0,
  ...(process.env.WORKER_UPSTREAM ? { upstream: process.env.WORKER_UPSTREAM } : {}),
  handleRuntimeStdio(stdout, stderr) {
    stdout.pipe(process.stderr);
    stderr.pipe(process.stderr);
  },
});
const url = await mf.ready;
process.stdout.write(JSON.stringify({ url: url.href }) + "\n");

let stopping = false;
async function stop() {
  if (!stopping) {
    stopping = true;
    await mf.dispose();
    process.exit(0);
  }
}
process.stdin.on("end", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

/**
 * wranglerToml reads the parts of wrangler.toml this script needs: the
 * top-level main and compatibility_date, and the [vars] table's string
 * values (KEY = "value" lines).
 *
 * @param {string} text
 */
function wranglerToml(text) {
  /** @type {{main: string, compatibility_date: string, vars: Record<string, string>}} */
  const out = { main: "", compatibility_date: "", vars: {} };
  let table = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const t = /^\[([^\]]+)\]$/.exec(line);
    if (t) {
      table = t[1];
      continue;
    }
    const kv = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"\s*(#.*)?$/.exec(line);
    if (!kv) {
      continue;
    }
    if (table === "vars") {
      out.vars[kv[1]] = kv[2];
    } else if (table === "" && (kv[1] === "main" || kv[1] === "compatibility_date")) {
      out[kv[1]] = kv[2];
    }
  }
  if (!out.main || !out.compatibility_date) {
    throw new Error("wrangler.toml: main or compatibility_date missing");
  }
  return out;
}

// build.mjs builds the package: TypeScript compiles src/anteroom.ts into
// dist/anteroom.js (an ES module, comments removed) and dist/anteroom.d.ts
// (its types, with their doc comments), each marked as generated. With --embed it also copies both to
// web/pages/assets/, where the node serves them (/assets/anteroom.js,
// /assets/anteroom.d.ts) and where they are committed: the README's first
// command needs Go alone. Go's TestClientPackageBuilt rebuilds and fails
// when the committed copies differ.
//
//   npm run build    # dist/
//   npm run embed    # dist/ and web/pages/assets/
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const tsc = require.resolve("typescript/bin/tsc");
const { version } = JSON.parse(readFileSync(require.resolve("typescript/package.json"), "utf8"));

execFileSync(process.execPath, [tsc, "-p", join(here, "tsconfig.json")], { stdio: "inherit" });
// The module again without its comments (the declarations keep them): the
// waiting room loads it, and its page stays under 50 KB.
execFileSync(process.execPath, [tsc, "-p", join(here, "tsconfig.json"), "--removeComments", "--declaration", "false"], { stdio: "inherit" });

const made = `// Generated from web/pages/js/anteroom/src/anteroom.ts by \`npm run embed\`
// in web/pages/js/anteroom (build.mjs, TypeScript ${version}); do not edit.
`;
const heads = {
  "anteroom.js": made + `// @ts-self-types="./anteroom.d.ts"\n`,
  "anteroom.d.ts": made,
};
for (const [name, head] of Object.entries(heads)) {
  const f = join(here, "dist", name);
  writeFileSync(f, head + readFileSync(f, "utf8"));
}
if (process.argv.includes("--embed")) {
  for (const name of Object.keys(heads)) copyFileSync(join(here, "dist", name), join(here, "..", "..", "assets", name));
}

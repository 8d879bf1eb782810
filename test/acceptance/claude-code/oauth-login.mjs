// The real Claude Code signs in to ctalk with OAuth: `claude mcp login` (under a pty, as it
// insists on one) opens the authorization URL through $BROWSER; this script hands that URL to
// headless Chromium, which fills ctalk's sign-in page and allows; Claude Code gets the code on its
// own loopback callback, exchanges it, and `claude mcp list` must then say "Connected".
//
//   URL_BASE=http://127.0.0.1:PORT CLAUDE_BIN=... node oauth-login.mjs [dcr|cimd|claude]
//
// How Claude Code names itself to ctalk (argv, default dcr):
//   dcr     the client is registered first (POST /oauth/register, Claude Code's loopback
//           callbacks) and given to Claude Code with `claude mcp add --client-id`
//   cimd    --client-id is http://127.0.0.1:$CIMD_PORT/claude-code-client.json, a metadata document this script
//           serves (the server must allow that origin: CTALK_OAUTH_CLIENT_METADATA_ALLOW)
//   claude  no --client-id: Claude Code picks its own (https://claude.ai/oauth/claude-code-client-metadata
//           when the server supports metadata documents), which an offline server cannot fetch
// Env: CHROMIUM (default /usr/bin/chromium), SCREENSHOTS (dir), KEEP=1 keeps the scratch HOME.
// Progress "ok ..." on stderr; the last stdout line is the result; exit 0 on success.
import http from "node:http";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync, readFileSync, existsSync, mkdirSync, rmSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";

const mode = process.argv[2] || "dcr";
const base = (process.env.URL_BASE || "").replace(/\/+$/, "");
const claudeBin = process.env.CLAUDE_BIN;
if (!base || !claudeBin || !["dcr", "cimd", "claude"].includes(mode)) {
  console.error("usage: URL_BASE=http://127.0.0.1:PORT CLAUDE_BIN=path node oauth-login.mjs [dcr|cimd|claude]");
  process.exit(2);
}
const cimdPort = Number(process.env.CIMD_PORT || 0);
if (mode === "cimd" && !cimdPort) { console.error("cimd: set CIMD_PORT (allowed by the server)"); process.exit(2); }
const shots = process.env.SCREENSHOTS || "";
const org = `cc-oauth-${randomBytes(3).toString("hex")}`;
const user = "umar";
const adminPassword = `admin-${randomBytes(9).toString("hex")}`;
const password = `user-${randomBytes(9).toString("hex")}`;
const ok = (m) => console.error(`ok: ${m}`);
class StepError extends Error {}
const fail = (m) => { throw new StepError(m); };
const timer = setTimeout(() => { console.log(`FAIL claude-code oauth-login (${mode}): timeout after 150s`); process.exit(1); }, 150000);

const work = mkdtempSync(join(tmpdir(), "cc-oauth-"));
const home = join(work, "home"), proj = join(work, "proj");
mkdirSync(home); mkdirSync(proj);
const env = { ...process.env, HOME: home, DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1" };
const claude = (args) => {
  const r = spawnSync(claudeBin, args, { cwd: proj, env, encoding: "utf8", timeout: 60000, stdio: ["ignore", "pipe", "pipe"] });
  return `${r.stdout}${r.stderr}`;
};
let metadataSrv = null;
let fakemodel = null;
const here = process.env.CC_HARNESS_DIR || new URL(".", import.meta.url).pathname;

async function signIn(url) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(url);
    const form = await page.waitForSelector("#org_id", { timeout: 15000 }).then(() => true, () => false);
    if (shots) { mkdirSync(shots, { recursive: true }); await page.screenshot({ path: join(shots, `claude-code-${mode}-signin.png`), fullPage: true }); }
    if (!form) {
      const alert = await page.locator('[role="alert"]').first().textContent({ timeout: 1000 }).catch(() => null);
      fail(`no sign-in form at ${url.split("?")[0]}: ${alert ?? (await page.textContent("body")).trim().slice(0, 300)}`);
    }
    await page.fill("#org_id", org);
    await page.fill("#user_id", user);
    await page.fill("#password", password);
    await page.click('button[name="decision"][value="allow"]');
    // Claude Code's callback is http://localhost:<port>/callback
    await page.waitForURL((u) => /^http:\/\/(localhost|127\.0\.0\.1):\d+\/callback/.test(u.href), { timeout: 20000 }).catch(async () => {
      const alert = await page.locator('[role="alert"]').first().textContent({ timeout: 1000 }).catch(() => null);
      fail(`no redirect to Claude Code's callback after Allow${alert ? `; the page said: ${alert.trim()}` : `; at ${page.url().split("?")[0]}`}`);
    });
    await page.waitForLoadState("load").catch(() => {});
    ok(`signed in and allowed in Chromium; redirected to ${page.url().split("?")[0]}`);
  } finally {
    await browser.close();
  }
}

let result;
try {
  // the person, through the seed's tools
  {
    const client = new Client({ name: "cc-oauth-seed", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    for (const [name, args] of [
      ["register_organization", { org_id: org, name: "Claude Code OAuth", admin_password: adminPassword }],
      ["register_user", { org_id: org, admin_password: adminPassword, user_id: user, name: "Umar", password, ownership: "cc" }],
    ]) {
      const r = await client.callTool({ name, arguments: args });
      if (r.isError) fail(`${name}: ${JSON.stringify(r.content).slice(0, 300)}`);
    }
    await client.close();
    ok(`registered ${user} in ${org}`);
  }

  // how Claude Code names itself
  const redirects = ["http://localhost/callback", "http://127.0.0.1/callback"];
  let clientId = null;
  if (mode === "dcr") {
    const r = await fetch(`${base}/oauth/register`, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ client_name: "Claude Code (acceptance)", redirect_uris: redirects, grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" }) });
    const body = await r.json().catch(() => ({}));
    if (r.status !== 201 || !body.client_id) fail(`POST /oauth/register answered ${r.status}: ${JSON.stringify(body).slice(0, 300)}`);
    clientId = body.client_id;
    ok("registered a client for Claude Code's loopback callbacks (RFC 7591)");
  } else if (mode === "cimd") {
    clientId = `http://127.0.0.1:${cimdPort}/claude-code-client.json`; // not oauth.sh's path: the server caches documents by URL
    const doc = JSON.stringify({ client_id: clientId, client_name: "Claude Code (acceptance)", redirect_uris: redirects,
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" });
    metadataSrv = http.createServer((req, res) => res.writeHead(200, { "Content-Type": "application/json" }).end(doc));
    await new Promise((resolve) => metadataSrv.listen(cimdPort, "127.0.0.1", resolve));
  }

  // claude mcp add, then login with $BROWSER handing the URL to us
  const add = ["mcp", "add", "--transport", "http", "ctalk", `${base}/oauth/mcp`, "-s", "user"];
  if (clientId) add.push("--client-id", clientId);
  console.error(`+ claude ${add.join(" ")}`);
  console.error(claude(add).trim().replace(/^/gm, "    "));
  const urlFile = join(work, "browser-url");
  const browserSh = join(work, "browser.sh");
  writeFileSync(browserSh, `#!/bin/sh\nprintf '%s' "$1" > '${urlFile}.tmp' && mv '${urlFile}.tmp' '${urlFile}'\n`);
  chmodSync(browserSh, 0o755);
  console.error("+ claude mcp login ctalk   (under script(1): it wants a terminal; BROWSER hands the URL to Chromium)");
  const login = spawn("script", ["-qfec", `'${claudeBin}' mcp login ctalk`, "/dev/null"],
    { cwd: proj, env: { ...env, BROWSER: browserSh }, stdio: ["pipe", "pipe", "pipe"] });
  let loginOut = "";
  login.stdout.on("data", (d) => { loginOut += d; });
  login.stderr.on("data", (d) => { loginOut += d; });
  const loginDone = new Promise((resolve) => login.on("exit", (code) => resolve(code)));
  const clean = (s) => s.replace(/\x1b\][^\x07]*\x07/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
  let url = null;
  for (let i = 0; i < 300 && !url; i++) {
    if (existsSync(urlFile)) url = readFileSync(urlFile, "utf8");
    else if (login.exitCode !== null) break;
    else await new Promise((r) => setTimeout(r, 100));
  }
  if (!url) fail(`claude mcp login opened no browser: ${clean(loginOut).trim().slice(0, 500)}`);
  const au = new URL(url);
  ok(`Claude Code opened ${au.origin}${au.pathname} client_id=${au.searchParams.get("client_id")} redirect_uri=${au.searchParams.get("redirect_uri")} scope=${au.searchParams.get("scope")} resource=${au.searchParams.get("resource")}`);
  await signIn(url);
  const code = await Promise.race([loginDone, new Promise((r) => setTimeout(() => r("timeout"), 30000))]);
  if (code === "timeout") { login.kill(); fail(`claude mcp login did not finish after the redirect: ${clean(loginOut).trim().slice(-500)}`); }
  console.error(clean(loginOut).trim().replace(/^/gm, "    "));
  if (code !== 0) fail(`claude mcp login exited ${code}`);
  ok("claude mcp login finished");

  console.error("+ claude mcp list");
  const list = claude(["mcp", "list"]);
  console.error(list.trim().replace(/^/gm, "    "));
  const line = list.split("\n").find((l) => l.startsWith(`ctalk: ${base}/oauth/mcp`)) || "";
  if (!line.includes("Connected")) fail(`claude mcp list after the login: ${line || "no ctalk line"}`);
  ok("claude mcp list: Connected");

  // a scripted session (fakemodel.py stands in for the model API) calls whoami with the OAuth token
  const fmPort = await new Promise((resolve) => { const s = http.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  const script = join(work, "script.json");
  writeFileSync(script, JSON.stringify({ default_text: "ok", conversations: [{ name: "whoami", match: "OAUTH-WHOAMI",
    turns: [{ tool_use: { name: "mcp__ctalk__whoami", input: {} } }, { text: "WHOAMI-RESULT {{last_result}}" }] }] }));
  fakemodel = spawn("python3", [join(here, "fakemodel.py"), "--port", String(fmPort), "--script", script, "--log-dir", join(work, "fakemodel")],
    { stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i < 100; i++) {
    if (await fetch(`http://127.0.0.1:${fmPort}/_fake/health`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const p = spawnSync(claudeBin, ["-p", "OAUTH-WHOAMI: who am I in ctalk?", "--output-format", "stream-json", "--verbose",
    "--allowedTools", "mcp__ctalk__*"], { cwd: proj, encoding: "utf8", timeout: 90000, stdio: ["ignore", "pipe", "pipe"],
    env: { ...env, ANTHROPIC_BASE_URL: `http://127.0.0.1:${fmPort}`, ANTHROPIC_API_KEY: "sk-ant-fake-0123456789abcdefghijklmnop" } });
  const out = (p.stdout || "").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const res = out.find((o) => o.type === "result") || {};
  const toolResults = out.filter((o) => o.type === "user").flatMap((o) => o.message?.content || []).filter((c) => c.type === "tool_result");
  const text = String(res.result || "");
  if (p.status !== 0 || res.subtype !== "success") fail(`claude -p: rc ${p.status}, ${res.subtype}: ${(p.stderr || "").slice(0, 300)}`);
  if (toolResults.some((c) => c.is_error)) fail(`claude -p: whoami returned an error: ${JSON.stringify(toolResults).slice(0, 400)}`);
  if (!text.includes("WHOAMI-RESULT") || !text.includes(user) || !text.includes(org)) fail(`claude -p: whoami did not name ${user} of ${org}: ${text.slice(0, 400)}`);
  ok(`claude -p called mcp__ctalk__whoami through /oauth/mcp: ${text.replace("WHOAMI-RESULT", "").trim().slice(0, 200)}`);
  result = `PASS claude-code oauth-login (${mode}): claude mcp login through ctalk's sign-in page; claude mcp list: Connected; claude -p called whoami as ${user}`;
} catch (e) {
  result = `FAIL claude-code oauth-login (${mode}): ${e instanceof StepError ? e.message : `${e?.constructor?.name}: ${e?.message}`}`;
} finally {
  clearTimeout(timer);
  metadataSrv?.close();
  fakemodel?.kill();
  if (process.env.KEEP === "1") console.error(`kept ${work}`); else rmSync(work, { recursive: true, force: true });
}
console.log(result);
process.exit(result.startsWith("PASS") ? 0 : 1);

// OAuth 2.1 sign-in to ctalk with clients nobody on this project wrote: the TypeScript MCP SDK's
// own OAuth client (auth(), OAuthClientProvider, StreamableHTTPClientTransport.finishAuth) and
// Debian's Chromium driven by playwright-core filling ctalk's sign-in page.
//
//   URL_BASE=http://127.0.0.1:8000 node oauth-client.mjs dcr|cimd|cimd-https
//
// Env:
//   URL_BASE     the server's public base URL (its issuer; CTALK_PUBLIC_URL when set there)
//   CIMD_PORT    cimd mode: the 127.0.0.1 port this script serves its Client ID Metadata
//                Document on over http; the server must be started with
//                CTALK_OAUTH_CLIENT_METADATA_ALLOW=http://127.0.0.1:$CIMD_PORT
//   CIMD_TLS_PORT, CIMD_TLS_CERT, CIMD_TLS_KEY
//                cimd-https mode: the same over https with this certificate for 127.0.0.1; the
//                server must allow https://127.0.0.1:$CIMD_TLS_PORT and trust the certificate
//                (SSL_CERT_FILE=$CIMD_TLS_CERT in its environment)
//   SCREENSHOTS  a directory: the sign-in page is saved there at phone and desktop size
//   CHROMIUM     the browser (default /usr/bin/chromium)
//
// Steps (each prints "ok ..." on stderr; the first failure prints "FAIL: ..." and exits 1):
//   1. register an organization and a user through the seed's tools on the open /mcp
//   2. an unauthenticated request to /oauth/mcp gets 401 with the resource_metadata challenge
//   3. the SDK discovers the servers, registers (dcr) or names its metadata URL (cimd, cimd-https), and
//      hands the authorization URL to the browser, which signs in and allows (dcr: after a wrong
//      password, which must show a role="alert" message; cimd: after a Deny, which must send the
//      client error=access_denied with its state and iss)
//   4. the callback checks state and iss (RFC 9207); finishAuth(code) exchanges the code
//   5. a fresh SDK client calls whoami on /oauth/mcp and must see the user
//   6. the access token is spoiled in the provider's store: the SDK gets 401, refreshes
//      through auth() with the refresh token, and whoami works again with rotated tokens
//   7. replaying the spent refresh token is refused (invalid_grant) and revokes the family:
//      the current access token then gets 401
// Prints the whoami results as JSON on stdout and exits 0 only if every step passed.
// Tokens, codes and passwords are never printed.
import http from "node:http";
import https from "node:https";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  UnauthorizedError,
  discoverAuthorizationServerMetadata,
  refreshAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { chromium } from "playwright-core";

const mode = process.argv[2];
if (!["dcr", "cimd", "cimd-https"].includes(mode)) {
  console.error("usage: URL_BASE=http://127.0.0.1:PORT node oauth-client.mjs dcr|cimd|cimd-https");
  process.exit(2);
}
const base = (process.env.URL_BASE || "").replace(/\/+$/, "");
if (!base) {
  console.error("set URL_BASE=http://127.0.0.1:PORT (the ctalk server's public base URL)");
  process.exit(2);
}
const isCimd = mode.startsWith("cimd");
const tls = mode === "cimd-https";
const cimdPort = Number((tls ? process.env.CIMD_TLS_PORT : process.env.CIMD_PORT) || 0);
if (isCimd && !cimdPort) {
  console.error(`${mode} mode: set ${tls ? "CIMD_TLS_PORT" : "CIMD_PORT"} to the port allowed by the server's CTALK_OAUTH_CLIENT_METADATA_ALLOW`);
  process.exit(2);
}
if (tls && !(process.env.CIMD_TLS_CERT && process.env.CIMD_TLS_KEY)) {
  console.error("cimd-https mode: set CIMD_TLS_CERT and CIMD_TLS_KEY (PEM files for 127.0.0.1; the server trusts the certificate through SSL_CERT_FILE)");
  process.exit(2);
}
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = process.env.SCREENSHOTS || "";
const mcpURL = new URL(`${base}/oauth/mcp`);

const suffix = randomBytes(3).toString("hex");
const org = `oauth-${mode}-${suffix}`;
const user = `ada-${mode}`;
const adminPassword = `admin-${randomBytes(9).toString("hex")}`;
const userPassword = `user-${randomBytes(9).toString("hex")}`;

const log = (msg) => console.error(`ok ${mode}: ${msg}`);
class StepError extends Error {}
const fail = (msg) => { throw new StepError(msg); };
const timer = setTimeout(() => { console.error(`FAIL: ${mode}: timeout after 120s`); process.exit(1); }, 120000);

// ---- local HTTP: the redirect URI's listener (random port) and, for cimd, the metadata document
function listen(port, handler, tlsOptions) {
  return new Promise((resolve, reject) => {
    const srv = tlsOptions ? https.createServer(tlsOptions, handler) : http.createServer(handler);
    srv.on("error", reject);
    srv.listen(port, "127.0.0.1", () => resolve(srv));
  });
}

let onCallback = null; // set while a browser sign-in waits for the redirect
const callbackSrv = await listen(0, (req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  if (u.pathname !== "/callback") { res.writeHead(404).end("not found"); return; }
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" })
    .end("<!doctype html><title>done</title><p>Signed in; you can close this window.</p>");
  onCallback?.(u.searchParams);
});
const redirectUrl = `http://127.0.0.1:${callbackSrv.address().port}/callback`;

let metadataSrv = null;
let clientMetadataUrl = null;
const clientMetadata = {
  client_name: `ctalk acceptance (${mode})`,
  redirect_uris: [redirectUrl],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  scope: "ctalk offline_access",
};
if (isCimd) {
  // a path of its own per run: the server caches documents by URL, and this run must see it fetch
  clientMetadataUrl = `${tls ? "https" : "http"}://127.0.0.1:${cimdPort}/client-${suffix}.json`;
  // Like Claude Code's own document: a loopback redirect without a port (RFC 8252 §7.3);
  // the redirect actually used carries this script's random port.
  const doc = { ...clientMetadata, client_id: clientMetadataUrl, redirect_uris: ["http://127.0.0.1/callback"] };
  let fetched = 0;
  metadataSrv = await listen(cimdPort, (req, res) => {
    if (new URL(req.url, "http://127.0.0.1").pathname !== new URL(clientMetadataUrl).pathname) { res.writeHead(404).end(); return; }
    fetched++;
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(doc));
  }, tls ? { cert: readFileSync(process.env.CIMD_TLS_CERT), key: readFileSync(process.env.CIMD_TLS_KEY) } : undefined);
  metadataSrv.fetchCount = () => fetched;
}

// ---- the OAuthClientProvider: everything in memory
class MemoryProvider {
  constructor() {
    this._client = undefined; this._tokens = undefined; this._verifier = undefined;
    this._discovery = undefined; this._state = undefined; this.authorizationUrl = undefined;
    // SDK 1.32.2 spells CIMD support `clientMetadataUrl` and uses it only for an https URL
    // (isHttpsUrl in client/auth.js) when the server's metadata says
    // client_id_metadata_document_supported. cimd-https does exactly that (the document is
    // served over TLS with a test certificate the server trusts); cimd serves plain http,
    // which the SDK refuses as a metadata URL, so there the client id is given as this client's
    // stored information: the authorization, token and refresh requests are the same.
    if (tls) this.clientMetadataUrl = clientMetadataUrl;
    else if (isCimd) this._client = { client_id: clientMetadataUrl };
  }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() { return clientMetadata; }
  state() { this._state = randomBytes(16).toString("hex"); return this._state; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = new URL(url); }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { if (!this._verifier) throw new Error("no code verifier saved"); return this._verifier; }
  saveDiscoveryState(s) { this._discovery = s; }
  discoveryState() { return this._discovery; }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "client") this._client = isCimd && !tls ? { client_id: clientMetadataUrl } : undefined;
    if (scope === "all" || scope === "tokens") this._tokens = undefined;
    if (scope === "all" || scope === "verifier") this._verifier = undefined;
    if (scope === "all" || scope === "discovery") this._discovery = undefined;
  }
}

// A fresh SDK client on a fresh transport; connect() runs initialize (and the auth flow on 401).
async function connect(url, provider) {
  const transport = new StreamableHTTPClientTransport(url, provider ? { authProvider: provider } : {});
  const client = new Client({ name: `ctalk-acceptance-oauth-${mode}`, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}
async function close({ client, transport }) {
  await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}
async function callOK(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content || []).map((c) => c.text ?? "").join("\n");
  if (res.isError) fail(`${name} returned isError: ${text.slice(0, 300)}`);
  return { res, text };
}
const expectUser = (text, label) => {
  if (!text.toLowerCase().includes(user)) fail(`${label}: whoami does not name ${user}: ${text.slice(0, 300)}`);
};

// ---- the browser: sign in on ctalk's page, return the callback's query parameters
// openSignIn loads the authorization URL and waits for the form; an error page fails with its text.
async function openSignIn(page, url) {
  const resp = await page.goto(url.href);
  const form = await page.waitForSelector('#org_id, [role="alert"]', { timeout: 15000 }).catch(() => null);
  if (!form) fail(`GET ${url.origin}${url.pathname} (${resp?.status()}) showed no sign-in form within 15s: ${(await page.textContent("body").catch(() => "")).trim().slice(0, 300)}`);
  if (!(await page.$("#org_id"))) fail(`GET ${url.origin}${url.pathname} answered ${resp?.status()} with no sign-in form: ${(await form.textContent()).trim()}`);
  if (resp?.status() !== 200) fail(`GET ${url.origin}${url.pathname} answered ${resp?.status()}, want 200`);
}
async function signIn(authorizationUrl) {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  try {
    if (shots) {
      mkdirSync(shots, { recursive: true });
      const desk = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const dp = await desk.newPage();
      await openSignIn(dp, authorizationUrl);
      await dp.screenshot({ path: join(shots, `signin-${mode}-desktop.png`), fullPage: true });
      await desk.close();
    }
    // The sign-in itself happens on a phone-sized touch screen: the page must work there.
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await phone.newPage();
    await openSignIn(page, authorizationUrl);
    if (shots) await page.screenshot({ path: join(shots, `signin-${mode}-phone.png`), fullPage: true });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > 390) fail(`the sign-in page is ${wide}px wide on a 390px phone screen (scrolls sideways)`);
    if (isCimd) {
      // Deny first: the client gets access_denied with its state and iss; then the person
      // opens the same link again and allows.
      const denied = new Promise((resolve) => { onCallback = resolve; });
      await page.click('button[name="decision"][value="deny"]');
      const d = await Promise.race([denied, new Promise((r) => setTimeout(() => r(null), 20000))]);
      if (!d) fail(`no redirect to ${redirectUrl} within 20s after Deny; page is at ${page.url().split("?")[0]}`);
      if (d.get("error") !== "access_denied" || d.has("code")) fail(`Deny: the redirect carries error=${d.get("error")}${d.has("code") ? " and a code" : ""}, want error=access_denied`);
      if (d.get("state") !== stateOf() || d.get("iss") !== base) fail(`Deny: the redirect's state or iss (${d.get("iss")}) is wrong`);
      log("Deny sends the client error=access_denied with its state and iss");
      await openSignIn(page, authorizationUrl);
    } else {
      // A wrong password first: the page comes back with an alert, no redirect, the password cleared.
      await page.fill("#org_id", org);
      await page.fill("#user_id", user);
      await page.fill("#password", `wrong-${userPassword}`);
      await page.click('button[name="decision"][value="allow"]');
      const el = await page.waitForSelector('[role="alert"]', { timeout: 20000 }).catch(() => null);
      if (!el) fail(`a wrong password did not bring the page back with a role="alert" message; page is at ${page.url().split("?")[0]}`);
      if (page.url().startsWith(redirectUrl)) fail("a wrong password redirected to the client");
      if (shots) await page.screenshot({ path: join(shots, `signin-${mode}-wrong-password.png`), fullPage: true });
      log(`a wrong password shows: ${(await el.textContent()).trim()}`);
      // so that an alert seen after the next submit is the next page's, not this one's
      await page.evaluate(() => document.querySelectorAll('[role="alert"]').forEach((e) => e.remove()));
    }
    const got = new Promise((resolve) => { onCallback = resolve; });
    await page.fill("#org_id", org);
    await page.fill("#user_id", user);
    await page.fill("#password", userPassword);
    await page.click('button[name="decision"][value="allow"]');
    const alert = page.waitForSelector('[role="alert"]', { timeout: 20000 }).then(async (el) => ({ alert: (await el.textContent())?.trim() }));
    const winner = await Promise.race([got.then((params) => ({ params })), alert,
      new Promise((r) => setTimeout(() => r({ timeout: true }), 20000))]);
    if (winner.alert !== undefined) {
      if (shots) await page.screenshot({ path: join(shots, `signin-${mode}-error.png`), fullPage: true });
      fail(`the sign-in page said: ${winner.alert}`);
    }
    if (winner.timeout) fail(`no redirect to ${redirectUrl} within 20s after Allow; page is at ${page.url().split("?")[0]}`);
    await page.waitForURL((u) => u.href.startsWith(redirectUrl), { timeout: 5000 }).catch(() => {});
    await phone.close();
    return winner.params;
  } finally {
    onCallback = null;
    await browser.close();
  }
}

const results = {};
let stateOf = () => undefined;
let exit = 0;
try {
  // 1. seed an organization and a user through the open /mcp
  {
    const c = await connect(new URL(`${base}/mcp`));
    await callOK(c.client, "register_organization", { org_id: org, name: `OAuth ${mode} acceptance`, admin_password: adminPassword });
    await callOK(c.client, "register_user", {
      org_id: org, admin_password: adminPassword, user_id: user, name: "Ada OAuth", password: userPassword, ownership: "acceptance",
    });
    await close(c);
    log(`registered ${user} in ${org} through /mcp`);
  }

  // 2. the challenge a client discovers everything from
  {
    const r = await fetch(mcpURL, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "1" } } }),
    });
    const www = r.headers.get("www-authenticate") || "";
    const want = `${base}/.well-known/oauth-protected-resource/oauth/mcp`;
    if (r.status !== 401) fail(`POST /oauth/mcp without a token answered ${r.status}, want 401`);
    if (!/^Bearer\b/i.test(www) || !www.includes(`resource_metadata="${want}"`)) {
      fail(`POST /oauth/mcp without a token: WWW-Authenticate is ${JSON.stringify(www)}, want Bearer resource_metadata="${want}"`);
    }
    log("401 + WWW-Authenticate resource_metadata on /oauth/mcp without a token");
  }
  const asMeta = await discoverAuthorizationServerMetadata(new URL(base));
  if (!asMeta) fail(`no authorization server metadata at ${base}/.well-known/oauth-authorization-server`);
  if (asMeta.issuer !== base) fail(`issuer is ${asMeta.issuer}, want ${base}`);
  if (!(asMeta.code_challenge_methods_supported || []).includes("S256")) fail("code_challenge_methods_supported lacks S256");
  if (isCimd && asMeta.client_id_metadata_document_supported !== true) fail("client_id_metadata_document_supported is not true");
  if (mode === "dcr" && !asMeta.registration_endpoint) fail("no registration_endpoint in the metadata");

  // 3. the SDK's flow up to the redirect
  const provider = new MemoryProvider();
  stateOf = () => provider._state;
  try {
    await connect(mcpURL, provider);
    fail("connect to /oauth/mcp without a token succeeded");
  } catch (e) {
    if (e instanceof StepError) throw e;
    if (!(e instanceof UnauthorizedError)) fail(`SDK auth flow before the redirect: ${e?.constructor?.name}: ${e?.message}`);
  }
  const au = provider.authorizationUrl;
  if (!au) fail("the SDK never called redirectToAuthorization");
  const q = au.searchParams;
  if (q.get("code_challenge_method") !== "S256") fail(`authorization URL: code_challenge_method=${q.get("code_challenge_method")}`);
  if ((q.get("resource") || "").replace(/\/$/, "") !== mcpURL.href) fail(`authorization URL: resource=${q.get("resource")}, want ${mcpURL.href}`);
  const clientId = q.get("client_id");
  if (isCimd && clientId !== clientMetadataUrl) fail(`authorization URL: client_id=${clientId}, want ${clientMetadataUrl}`);
  if (mode === "dcr" && !provider._client?.client_id) fail("dynamic client registration returned no client_id");
  log(`${mode === "dcr" ? "registered by DCR" : "client id is the metadata URL"}; authorization URL ${au.origin}${au.pathname} (scope=${q.get("scope")})`);

  // 4. the person signs in; the redirect carries the code, state and iss
  const params = await signIn(au);
  if (params.get("error")) fail(`the redirect carries error=${params.get("error")}: ${params.get("error_description") || ""}`);
  const code = params.get("code");
  if (!code) fail("the redirect carries no code");
  if (params.get("state") !== provider._state) fail("the redirect's state is not the one the client sent");
  if (params.get("iss") !== asMeta.issuer) fail(`the redirect's iss is ${JSON.stringify(params.get("iss"))}, want ${asMeta.issuer} (RFC 9207)`);
  if (isCimd && metadataSrv.fetchCount() < 1) fail("the server never fetched the client metadata document");
  log(`signed in and allowed in Chromium; redirect has code, state and iss=${params.get("iss")}${shots ? `; screenshots in ${shots}` : ""}`);
  await new StreamableHTTPClientTransport(mcpURL, { authProvider: provider }).finishAuth(code);
  const t1 = provider.tokens();
  if (!t1?.access_token?.startsWith("ctalk_")) fail("the access token does not have the ctalk_ prefix");
  if (!t1.refresh_token?.startsWith("ctalk_rt_")) fail("no refresh token with the ctalk_rt_ prefix");
  if ((t1.token_type || "").toLowerCase() !== "bearer") fail(`token_type is ${t1.token_type}`);
  log(`code exchanged: access token (expires_in=${t1.expires_in}, scope=${t1.scope}) and refresh token`);

  // 5. whoami with the issued token
  {
    const c = await connect(mcpURL, provider);
    const { res, text } = await callOK(c.client, "whoami", {});
    expectUser(text, "after sign-in");
    results.whoami = res.structuredContent ?? text;
    await close(c);
    log(`whoami on /oauth/mcp names ${user}`);
  }

  // 6. refresh through the SDK: spoil the access token, the 401 makes auth() use the refresh token
  {
    provider.saveTokens({ ...t1, access_token: `ctalk_${randomBytes(24).toString("hex")}` });
    const c = await connect(mcpURL, provider);
    const t2 = provider.tokens();
    if (t2.access_token === t1.access_token) fail("refresh: no new access token");
    if (!t2.refresh_token || t2.refresh_token === t1.refresh_token) fail("refresh: the refresh token was not rotated");
    const { res, text } = await callOK(c.client, "whoami", {});
    expectUser(text, "after refresh");
    results.whoami_after_refresh = res.structuredContent ?? text;
    await close(c);
    log("a spoiled access token got 401; the SDK refreshed (rotated) and whoami works again");

    // 7. the spent refresh token: refused, and it revokes the whole grant
    try {
      await refreshAuthorization(new URL(provider._discovery.authorizationServerUrl), {
        metadata: provider._discovery.authorizationServerMetadata, clientInformation: provider._client,
        refreshToken: t1.refresh_token, resource: mcpURL,
      });
      fail("the spent refresh token was accepted again");
    } catch (e) {
      if (e instanceof StepError) throw e;
      if (e?.constructor?.errorCode !== "invalid_grant") fail(`replaying the spent refresh token: ${e?.constructor?.name}: ${e?.message}, want invalid_grant`);
    }
    const r = await fetch(mcpURL, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: `Bearer ${t2.access_token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "1" } } }),
    });
    if (r.status !== 401) fail(`after the spent refresh token was replayed, the grant's access token got ${r.status}, want 401 (family revoked)`);
    if (!/invalid_token/.test(r.headers.get("www-authenticate") || "")) fail(`revoked token: WWW-Authenticate lacks error="invalid_token": ${r.headers.get("www-authenticate")}`);
    log("replaying the spent refresh token: invalid_grant, and the grant's access token is then refused");
  }

  console.log(JSON.stringify({ mode, org, user, ...results }, null, 2));
} catch (e) {
  console.error(`FAIL: ${mode}: ${e instanceof StepError ? e.message : `${e?.constructor?.name}: ${e?.message ?? e}`}`);
  exit = 1;
} finally {
  clearTimeout(timer);
  callbackSrv.close();
  metadataSrv?.close();
}
process.exit(exit);

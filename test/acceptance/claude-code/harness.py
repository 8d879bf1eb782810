"""Shared plumbing for the Claude Code scenarios: start ctalk, a logging proxy and the fake model on free
ports, run the real Claude Code against them (print mode, SDK-host mode, or interactive under tmux), and
read back what each side saw. Everything lives in one scratch directory; every process it starts is
stopped by its pid at the end."""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # mcp.py beside this file
from mcp import Client, ToolError, find  # noqa: E402,F401

API_KEY = "sk-ant-fake-0123456789abcdefghijklmnop"


def note(*a):
    print("  ", *a, file=sys.stderr, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    note("ok:", what)


def free_ports(n):
    """n distinct free ports. Each socket stays bound until all are chosen: bound and closed one at a time,
    the kernel handed out the same port twice, and the relay and the fake model then raced for it."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_until(fn, timeout, step=0.1, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def find_claude():
    if os.environ.get("CLAUDE_BIN"):
        return os.environ["CLAUDE_BIN"]
    tools = os.environ.get("TOOLS") or os.path.join(os.environ.get("HOME", ""), ".cache", "ctalk-acceptance")
    cand = os.path.join(tools, "node_modules", ".bin", "claude")
    if os.access(cand, os.X_OK):
        return cand
    found = shutil.which("claude")
    if found:
        return found
    raise SystemExit("no Claude Code: set CLAUDE_BIN, or install it with ../run-clients.sh (it installs the pinned clients into $TOOLS)")


class Harness:
    """One scratch world: a ctalk relay (behind a logging proxy), the fake model, and Claude Code homes."""

    def __init__(self, name):
        self.t0 = time.time()
        self.name = name
        self.work = tempfile.mkdtemp(prefix=f"ccfake-{name}-")
        self.procs = []
        self.tmux_socket = None
        self.claude = find_claude()
        self.claude_version = subprocess.run([self.claude, "--version"], capture_output=True, text=True,
                                             timeout=60, env=self.base_env(os.path.join(self.work, "vhome"))
                                             ).stdout.strip()
        self.ctalk = self._ctalk_binary()
        self.script_path = os.path.join(self.work, "script.json")
        self.fm_log = os.path.join(self.work, "fakemodel")
        self.proxy_log = os.path.join(self.work, "relay-proxy.jsonl")

    # ---- processes -------------------------------------------------------------------------------

    def _ctalk_binary(self):
        if os.environ.get("CTALK_BIN"):
            return os.environ["CTALK_BIN"]
        # Default: the checkout this harness lives in (test/acceptance/claude-code/ -> three levels up),
        # so the scenarios run from any directory.
        src = os.environ.get("CTALK_SRC") or os.path.normpath(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
        if not os.path.isdir(os.path.join(src, "cmd", "ctalk")):
            raise SystemExit("no ctalk: set CTALK_BIN, or CTALK_SRC (the checkout root)")
        out = os.path.join(self.work, "ctalk")
        r = subprocess.run(["go", "build", "-o", out, "./cmd/ctalk"], cwd=src, capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise SystemExit("ctalk build failed: " + r.stderr[-500:])
        return out

    def spawn(self, args, log_name, env=None, cwd=None):
        f = open(os.path.join(self.work, log_name), "ab")
        p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env, cwd=cwd or self.work, start_new_session=True)
        self.procs.append(p)
        return p

    def start(self, conversations):
        """Starts relay, proxy and fake model; writes the model's script."""
        self.write_script(conversations)
        self.relay_port, self.proxy_port, self.fm_port = free_ports(3)
        # The relay's database: PostgreSQL when DATABASE_URL is set (each run registers an organization of
        # its own, so a database may be shared), else a fresh SQLite file.
        env = dict(os.environ, PORT=str(self.relay_port))
        if os.environ.get("DATABASE_URL"):
            env.pop("RELAY_DB_PATH", None)
            self.backend = "postgres"
        else:
            env["RELAY_DB_PATH"] = os.path.join(self.work, "relay.sqlite3")
            self.backend = "sqlite"
        self.relay_proc = self.spawn([self.ctalk, "serve"], "relay.log", env=env)
        self.spawn([sys.executable, os.path.join(HERE, "mcpproxy.py"), "--port", str(self.proxy_port),
                    "--upstream", f"http://127.0.0.1:{self.relay_port}", "--log", self.proxy_log], "proxy.out")
        self.spawn([sys.executable, os.path.join(HERE, "fakemodel.py"), "--port", str(self.fm_port),
                    "--script", self.script_path, "--log-dir", self.fm_log], "fakemodel.out")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{self.relay_port}/health"), 20, what="ctalk /health")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{self.proxy_port}/health"), 10, what="proxy")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{self.fm_port}/_fake/health"), 10, what="fake model")
        self.url = f"http://127.0.0.1:{self.proxy_port}/mcp"  # what every client uses: logged
        self.direct_url = f"http://127.0.0.1:{self.relay_port}/mcp"  # set-up and checks: not logged
        note(f"relay :{self.relay_port} ({self.backend}) proxy :{self.proxy_port} fake model :{self.fm_port} work {self.work}")

    def write_script(self, conversations, **extra):
        tmp = self.script_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict({"conversations": conversations, "default_text": "ok"}, **extra), f, indent=1)
        os.replace(tmp, self.script_path)

    def stop(self):
        if self.tmux_socket:
            sock = subprocess.run(["tmux", "-L", self.tmux_socket, "display-message", "-p", "#{socket_path}"],
                                  capture_output=True, text=True, timeout=10).stdout.strip()
            subprocess.run(["tmux", "-L", self.tmux_socket, "kill-server"], capture_output=True, timeout=10)
            if sock.endswith(self.tmux_socket) and os.path.exists(sock):
                os.remove(sock)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)  # its own session: the process and its children
                except OSError:
                    p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        self._stop_strays()
        if os.environ.get("KEEP"):
            print(f"  (kept {self.work})", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def _stop_strays(self):
        """Processes Claude Code started for us and left behind when its tmux session went (a re-armed
        Stop hook's `ctalk wait`, an MCP bridge): found by this run's unique relay URL or scratch
        directory in their command line or environment, and stopped by pid."""
        marks = [self.work.encode()] + ([f"127.0.0.1:{self.proxy_port}/".encode()] if hasattr(self, "proxy_port") else [])
        me = os.getpid()
        for _ in range(2):
            found = []
            for d in os.listdir("/proc"):
                if not d.isdigit() or int(d) == me:
                    continue
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as f:
                        blob = f.read()
                    with open(f"/proc/{d}/environ", "rb") as f:
                        blob += f.read()
                except OSError:
                    continue
                if any(m in blob for m in marks):
                    found.append(int(d))
            for pid in found:
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
            if not found:
                return
            time.sleep(0.5)

    def elapsed(self):
        return time.time() - self.t0

    # ---- ctalk data ----------------------------------------------------------------------------------

    def make_org(self, users=("umar", "john")):
        c = Client(self.direct_url)
        self.org = "org-" + secrets.token_hex(3)
        self.admin = "admin-" + secrets.token_hex(10)
        c.call("register_organization", {"org_id": self.org, "name": "Org", "admin_password": self.admin})
        self.pw, self.tok = {}, {}
        for u in users:
            self.pw[u] = "pw-" + secrets.token_hex(10)
            c.call("register_user", {"org_id": self.org, "admin_password": self.admin, "user_id": u,
                                     "name": u.title(), "password": self.pw[u], "ownership": f"{u}-repo",
                                     "notes": ""})
            self.tok[u] = find(c.call("login", {"org_id": self.org, "user_id": u, "password": self.pw[u]}),
                               "auth_token")
        note(f"organization {self.org} with {', '.join(users)}")

    def as_user(self, user):
        return Client(self.direct_url, bearer=self.tok[user])

    def ctalk_login(self, user):
        """`ctalk login` for the bridge and `ctalk wait`: credentials under a config dir of the user's own."""
        cfg = os.path.join(self.work, "cfg-" + user)
        r = subprocess.run([self.ctalk, "login", "--relay", self.url, "--org", self.org, "--user", user],
                           input=self.pw[user] + "\n", capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, XDG_CONFIG_HOME=cfg))
        check(r.returncode == 0, f"ctalk login as {user} ({(r.stdout + r.stderr).strip().splitlines()[0][:90]})")
        return cfg

    # ---- MCP configurations ----------------------------------------------------------------------------

    def mcp_http(self, user):
        return {"mcpServers": {"ctalk": {"type": "http", "url": self.url,
                                         "headers": {"Authorization": "Bearer " + self.tok[user]}}}}

    def mcp_bridge(self, user, cfg, tap_log, legacy_only=False):
        args = [os.path.join(HERE, "stdiotap.py")] + (["--legacy-only"] if legacy_only else []) + \
               [tap_log, "--", self.ctalk, "stdio", "--relay", self.url]
        return {"mcpServers": {"ctalk": {"type": "stdio", "command": sys.executable, "args": args,
                                         "env": {"XDG_CONFIG_HOME": cfg}}}}

    def write_json(self, name, obj):
        p = os.path.join(self.work, name)
        with open(p, "w") as f:
            json.dump(obj, f, indent=1)
        return p

    # ---- Claude Code -----------------------------------------------------------------------------------

    def base_env(self, home):
        os.makedirs(home, exist_ok=True)
        path = os.path.dirname(self.claude) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
        return {"PATH": path, "HOME": home, "TERM": "xterm-256color", "LANG": "C.UTF-8",
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{getattr(self, 'fm_port', 9)}",
                "ANTHROPIC_API_KEY": API_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}

    def home(self, user, interactive=False):
        """A Claude Code home for a user; interactive ones are past onboarding and trust the project."""
        home = os.path.join(self.work, "home-" + user)
        proj = os.path.join(self.work, "proj-" + user)
        os.makedirs(proj, exist_ok=True)
        os.makedirs(home, exist_ok=True)
        if interactive:
            cfg = os.path.join(home, ".claude.json")
            d = {}
            if os.path.exists(cfg):
                d = json.load(open(cfg))
            d.update({"hasCompletedOnboarding": True, "lastOnboardingVersion": self.claude_version.split()[0],
                      "theme": "dark", "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []}})
            d.setdefault("projects", {})[proj] = {"hasTrustDialogAccepted": True,
                                                  "hasCompletedProjectOnboarding": True}
            with open(cfg, "w") as f:
                json.dump(d, f)
        return home, proj

    def claude_args(self, mcp_cfg, settings=None, extra=()):
        a = ["--mcp-config", mcp_cfg, "--strict-mcp-config", "--allowedTools", "mcp__ctalk__*"]
        if settings:
            a += ["--settings", settings]
        return a + list(extra)

    def run_print(self, user, prompt, mcp_cfg, settings=None, timeout=90, extra=()):
        """`claude -p PROMPT --output-format stream-json`; returns the parsed output lines and seconds."""
        home, proj = self.home(user)
        t = time.time()
        r = subprocess.run([self.claude, "-p", prompt, "--output-format", "stream-json", "--verbose"] +
                           self.claude_args(mcp_cfg, settings, extra),
                           cwd=proj, env=self.base_env(home), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        out = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        res = next((o for o in out if o.get("type") == "result"), {})
        check(r.returncode == 0 and res.get("subtype") == "success",
              f"claude -p as {user} finished ({time.time() - t:.1f}s, rc {r.returncode}) {r.stderr.strip()[:200]}")
        return out, res

    def run_host(self, user, prompt, mcp_cfg, elicitation, timeout=90, settings=None):
        """Claude Code as an SDK host drives it (--input-format stream-json): the host answers each
        elicitation control request with `elicitation` ("accept", "decline" or "cancel").
        Returns (output lines, result, control requests seen)."""
        home, proj = self.home(user)
        cmd = [self.claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"] + \
            self.claude_args(mcp_cfg, settings)
        err = open(os.path.join(self.work, f"host-{user}.stderr"), "a")
        p = subprocess.Popen(cmd, cwd=proj, env=self.base_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=err, text=True, bufsize=1, start_new_session=True)
        self.procs.append(p)
        deadline = time.time() + timeout

        def send(o):
            p.stdin.write(json.dumps(o) + "\n")
            p.stdin.flush()

        send({"type": "user", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": None,
              "session_id": ""})
        out, controls, res = [], [], {}
        import threading
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGTERM))
        timer.start()
        try:
            for line in p.stdout:
                if not line.startswith("{"):
                    continue
                o = json.loads(line)
                out.append(o)
                if o.get("type") == "control_request":
                    req = o.get("request", {})
                    controls.append(req)
                    if req.get("subtype") == "elicitation":
                        resp = {"action": elicitation, "content": {}}
                    elif req.get("subtype") == "can_use_tool":
                        resp = {"behavior": "allow", "updatedInput": req.get("input", {})}
                    else:
                        resp = {}
                    send({"type": "control_response", "response": {"subtype": "success",
                                                                   "request_id": o["request_id"], "response": resp}})
                elif o.get("type") == "result":
                    res = o
                    p.stdin.close()
            p.wait(timeout=max(1, deadline - time.time()))
        finally:
            timer.cancel()
        check(res.get("subtype") == "success", f"claude (SDK host, elicitation={elicitation}) as {user} finished")
        return out, res, controls

    # ---- tmux (interactive) ------------------------------------------------------------------------------

    def tmux(self, *args, check_rc=True):
        r = subprocess.run(["tmux", "-L", self.tmux_socket] + list(args), capture_output=True, text=True, timeout=20)
        if check_rc and r.returncode != 0:
            raise RuntimeError(f"tmux {args[0]}: {r.stderr.strip()}")
        return r.stdout

    def tui_start(self, session, user, mcp_cfg, extra=(), settings=None, debug_log=None):
        if not shutil.which("tmux"):
            raise SystemExit("tmux is not installed (apt-get install -y tmux)")
        if not self.tmux_socket:
            self.tmux_socket = "ccfake-" + secrets.token_hex(4)
        home, proj = self.home(user, interactive=True)
        env = self.base_env(home)
        args = [self.claude] + self.claude_args(mcp_cfg, settings, extra)
        if debug_log:
            args += ["--debug-file", debug_log]
        envs = " ".join(f"{k}={shell_quote(v)}" for k, v in env.items())
        cmd = f"cd {shell_quote(proj)} && exec env -i {envs} " + " ".join(shell_quote(a) for a in args)
        cols = os.environ.get("TUI_COLUMNS", "180")  # the terminal's width: 80 shows what a narrow one sees
        try:
            self.tmux("new-session", "-d", "-s", session, "-x", cols, "-y", "50", cmd)
        except RuntimeError as e:  # seen once on a loaded machine: "server exited unexpectedly"; try once more
            note(f"tmux new-session failed ({e}); retrying once")
            time.sleep(1)
            self.tmux("new-session", "-d", "-s", session, "-x", cols, "-y", "50", cmd)
        self.tmux("set-option", "-t", session, "remain-on-exit", "on")
        def ready():
            s = self.screen(session)
            return "\u276f" in s and ("auto mode" in s or "shortcuts" in s or "for agents" in s)
        try:
            wait_until(ready, 30, step=0.3, what="the Claude Code prompt")
        except TimeoutError:
            raise AssertionError(f"no Claude Code prompt in tmux session {session}: {self.screen(session)[-800:]}")
        time.sleep(0.5)

    def screen(self, session):
        return self.tmux("capture-pane", "-p", "-t", session, check_rc=False)

    def type(self, session, text):
        self.tmux("send-keys", "-t", session, "-l", text)
        time.sleep(0.3)
        self.tmux("send-keys", "-t", session, "Enter")

    # ---- what the fake model and the relay saw ------------------------------------------------------------

    def transcript(self, conversation=None):
        t = read_jsonl(os.path.join(self.fm_log, "transcript.jsonl"))
        return [x for x in t if conversation is None or x["conversation"] == conversation]

    def relay_log(self):
        return read_jsonl(self.proxy_log)

    def model_requests(self):
        return read_jsonl(os.path.join(self.fm_log, "requests.jsonl"))


def shell_quote(s):
    return "'" + str(s).replace("'", "'\"'\"'") + "'"


def results_of(out, tool):
    """tool_result texts for calls of `tool` in a stream-json output."""
    ids = {}
    for o in out:
        if o.get("type") == "assistant":
            for b in o["message"].get("content", []):
                if b.get("type") == "tool_use":
                    ids[b["id"]] = b["name"]
    texts = []
    for o in out:
        if o.get("type") == "user" and isinstance(o["message"].get("content"), list):
            for b in o["message"]["content"]:
                if b.get("type") == "tool_result" and ids.get(b.get("tool_use_id")) == tool:
                    c = b.get("content")
                    texts.append(c if isinstance(c, str) else json.dumps(c))
    return texts


def calls(log, method=None, tool=None, client=None):
    """Client-to-server JSON-RPC bodies in the relay proxy log."""
    out = []
    for e in log:
        b = e.get("body")
        if e.get("dir") != "c2s" or not isinstance(b, dict):
            continue
        if method and b.get("method") != method:
            continue
        if tool and (b.get("params") or {}).get("name") != tool:
            continue
        meta = (b.get("params") or {}).get("_meta") or {}
        name = (meta.get("io.modelcontextprotocol/clientInfo") or {}).get("name") or \
            ((b.get("params") or {}).get("clientInfo") or {}).get("name")
        if client and name != client:
            continue
        out.append(b)
    return out


def exchanges(log, tool):
    """(request body, [response bodies]) for each tools/call of `tool` in the relay proxy log."""
    out = []
    for e in log:
        b = e.get("body")
        if e.get("dir") == "c2s" and isinstance(b, dict) and b.get("method") == "tools/call" and \
                (b.get("params") or {}).get("name") == tool:
            resp = [x.get("body") for x in log if x.get("dir") == "s2c" and x.get("req") == e.get("req")]
            out.append((b, resp))
    return out


def grep(path, pattern):
    if not os.path.exists(path):
        return []
    rx = re.compile(pattern)
    with open(path, errors="replace") as f:
        return [l.rstrip("\n") for l in f if rx.search(l)]

#!/usr/bin/env bash
# Three `ctalk serve` replicas behind HAProxy (round-robin, no sticky
# sessions), one PostgreSQL behind PgBouncer in transaction mode, on this
# machine. The replicas migrate at boot through PgBouncer and LISTEN on a
# direct connection (CTALK_LISTEN_DATABASE_URL). It shows, and exits non-zero
# otherwise:
#
#   1. every tool works through the balancer, and every replica served calls
#   2. a question asked on one replica wakes a wait_for_messages held on
#      another: p50/p99 over 100 events, p99 < 1 s with the LISTEN URL;
#      without it (LISTEN through PgBouncer hears nothing) measured only,
#      and the replica says in its log that wake-ups fall back to the poll
#   3. kill -9 of a replica under a write load loses no acknowledged write,
#      and clients that retry a failed call once (after 1 s) all succeed
#   4. a rolling restart (SIGTERM one replica at a time, start it, wait
#      healthy) under the same load: 0 failed calls with one retry
#   5. `ctalk bench` through the balancer with 1 and with 3 replicas
#
# Needs: PostgreSQL answering as postgres without a password on
# $PG_HOST:$PG_PORT (as .ci/run sets up), haproxy and pgbouncer (Debian's:
# apt-get install -y haproxy pgbouncer), go. Run from anywhere:
#   bash test/replicas/run.sh
# CTALK_BIN uses a built binary instead of building one; KEEP=1 keeps the
# work directory (logs, configs); BENCH_DURATION (default 10s) is each
# bench's length. The figures end the output, each on a line of its own.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export PATH="$PATH:/usr/local/go/bin:/usr/sbin"
export GOFLAGS=${GOFLAGS:--buildvcs=false}

PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_ADMIN_URL="postgres://postgres@$PG_HOST:$PG_PORT/postgres?sslmode=disable"
DB=ctalk_replicas
BENCH_DURATION=${BENCH_DURATION:-10s}

WORK=$(mktemp -d /tmp/ctalk-replicas.XXXXXX)
chmod 755 "$WORK"
PIDS=()        # every process this script started, killed at exit
REPLICA_PID=() # by replica number 1..3
REPLICA_PORT=()
FIGURES=()

die() {
  echo "REPLICAS FAILED: $*" >&2
  exit 1
}

on_exit() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$WORK"/*.log; do
      [ -f "$f" ] || continue
      echo "---- last lines of $f" >&2
      tail -n 15 "$f" >&2
    done
  fi
  psql_admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  if [ -n "${KEEP:-}" ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

psql_admin() {
  PGOPTIONS="-c client_min_messages=warning" PGCONNECT_TIMEOUT=5 psql "$PG_ADMIN_URL" -w -v ON_ERROR_STOP=1 -qtA "$@"
}

# free_port: a TCP port nothing on 127.0.0.1 answers on and no earlier call returned.
TAKEN=" "
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000)) # below Linux's ephemeral range
    case "$TAKEN" in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      TAKEN="$TAKEN$p "
      echo "$p"
      return 0
    fi
  done
  die "no free TCP port found on 127.0.0.1"
}

# wait_tcp PORT NAME: wait until something accepts connections on PORT.
wait_tcp() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  die "$2 does not accept connections on 127.0.0.1:$1"
}

# ---- prerequisites ---------------------------------------------------------

command -v haproxy >/dev/null || die "haproxy not found: apt-get install -y haproxy"
command -v pgbouncer >/dev/null || die "pgbouncer not found: apt-get install -y pgbouncer"
command -v psql >/dev/null || die "psql not found: apt-get install -y postgresql-client"
PGCONNECT_TIMEOUT=5 psql "$PG_ADMIN_URL" -w -qtAc 'SELECT 1' >/dev/null ||
  die "cannot connect as $PG_ADMIN_URL (PostgreSQL must answer for the postgres role without a password)"

if [ -n "${CTALK_BIN:-}" ]; then
  cp "$CTALK_BIN" "$WORK/ctalk"
else
  go build -o "$WORK/ctalk" ./cmd/ctalk
fi
go build -o "$WORK/driver" ./test/replicas/driver

psql_admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
psql_admin -c "CREATE DATABASE $DB"
DIRECT_URL="postgres://postgres@$PG_HOST:$PG_PORT/$DB?sslmode=disable"

# ---- PgBouncer, transaction mode ---------------------------------------------

PGB_PORT=$(free_port)
mkdir -m 777 "$WORK/pgbouncer"
cat >"$WORK/pgbouncer/pgbouncer.ini" <<EOF
[databases]
$DB = host=$PG_HOST port=$PG_PORT dbname=$DB
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $WORK/pgbouncer/users.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
logfile = $WORK/pgbouncer.log
EOF
echo '"postgres" ""' >"$WORK/pgbouncer/users.txt"
chmod 644 "$WORK/pgbouncer/"*
touch "$WORK/pgbouncer.log" && chmod 666 "$WORK/pgbouncer.log"
if [ "$(id -u)" -eq 0 ]; then # it refuses to run as root
  pgb_user=postgres
  id -u postgres >/dev/null 2>&1 || pgb_user=nobody
  pgbouncer -u "$pgb_user" "$WORK/pgbouncer/pgbouncer.ini" >/dev/null 2>&1 &
else
  pgbouncer "$WORK/pgbouncer/pgbouncer.ini" >/dev/null 2>&1 &
fi
PIDS+=($!)
wait_tcp "$PGB_PORT" PgBouncer
POOLED_URL="postgres://postgres@127.0.0.1:$PGB_PORT/$DB?sslmode=disable"
psql "$POOLED_URL" -w -qtAc 'SELECT 1' >/dev/null || die "cannot query through PgBouncer at $POOLED_URL"
echo "PgBouncer (transaction mode) on 127.0.0.1:$PGB_PORT in front of $PG_HOST:$PG_PORT/$DB"

# ---- replicas ----------------------------------------------------------------

for n in 1 2 3; do REPLICA_PORT[$n]=$(free_port); done

# start_replica N [ENV...]: start replica N (through PgBouncer, LISTEN direct
# unless ENV says otherwise); wait_healthy N waits for its /health.
start_replica() {
  local n=$1; shift
  env -u DATABASE_URL -u RELAY_DB_PATH -u CTALK_LISTEN_DATABASE_URL PORT="${REPLICA_PORT[$n]}" \
    DATABASE_URL="$POOLED_URL" CTALK_LISTEN_DATABASE_URL="$DIRECT_URL" CTALK_SHUTDOWN_TIMEOUT=10s "$@" \
    "$WORK/ctalk" serve >>"$WORK/replica$n.log" 2>&1 &
  REPLICA_PID[$n]=$!
  PIDS+=($!)
}

wait_healthy() {
  local n=$1 i
  for i in $(seq 1 150); do
    kill -0 "${REPLICA_PID[$n]}" 2>/dev/null || die "replica $n exited before answering /health (see replica$n.log)"
    [ "$(curl -fsS --max-time 2 "http://127.0.0.1:${REPLICA_PORT[$n]}/health" 2>/dev/null)" = '{"status":"ok"}' ] && return 0
    sleep 0.1
  done
  die "replica $n did not answer /health within 15 s"
}

stop_replica() { # SIGTERM and wait for the drain
  kill -TERM "${REPLICA_PID[$1]}" 2>/dev/null || true
  wait "${REPLICA_PID[$1]}" 2>/dev/null || true
}

# Booting together through the pooler: each migration applies once.
for n in 1 2 3; do start_replica "$n"; done
for n in 1 2 3; do wait_healthy "$n"; done
grep -qi "prepared statement" "$WORK"/replica*.log && die "a replica met a prepared-statement error through PgBouncer"
echo "three replicas booted together through PgBouncer: ports ${REPLICA_PORT[*]}"

# ---- HAProxy -------------------------------------------------------------------

HAP_PORT=$(free_port)
cat >"$WORK/haproxy.cfg" <<EOF
global
  maxconn 4000
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  retries 3
  option redispatch 1
frontend ctalk
  bind 127.0.0.1:$HAP_PORT
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /health
  http-check expect status 200
  default-server inter 300ms fall 2 rise 2
  http-response set-header X-Served-By %[srv_name]
  server r1 127.0.0.1:${REPLICA_PORT[1]} check
  server r2 127.0.0.1:${REPLICA_PORT[2]} check
  server r3 127.0.0.1:${REPLICA_PORT[3]} check
EOF
haproxy -c -q -f "$WORK/haproxy.cfg" || die "haproxy rejects its configuration"
haproxy -db -f "$WORK/haproxy.cfg" >"$WORK/haproxy.log" 2>&1 &
PIDS+=($!)
wait_tcp "$HAP_PORT" HAProxy
LB="http://127.0.0.1:$HAP_PORT/mcp"
sleep 1 # HAProxy's first health checks (rise 2 × 300 ms)
echo "HAProxy round-robin on $LB"

# ---- 1. every tool through the balancer ------------------------------------------

echo "== every tool through the balancer"
out=$("$WORK/driver" tools -url "$LB") || die "tools through the balancer: $out"
echo "$out"

# ---- 2. cross-replica wake-ups -------------------------------------------------------

echo "== wake-ups: asked on replica 1, waited on replica 2, LISTEN on a direct connection"
R1="http://127.0.0.1:${REPLICA_PORT[1]}/mcp"
R2="http://127.0.0.1:${REPLICA_PORT[2]}/mcp"
out=$("$WORK/driver" wake -ask "$R1" -wait "$R2" -events 100 -pairs 10 -max-p99 1s -label "_listen_url") ||
  die "wake-ups with CTALK_LISTEN_DATABASE_URL: $out"
echo "$out"
FIGURES+=("$(grep '^RESULT' <<<"$out")")

echo "== wake-ups without CTALK_LISTEN_DATABASE_URL (LISTEN through PgBouncer): measured, not asserted"
stop_replica 2
# default_query_exec_mode=exec: PgBouncer's port here is not one ctalk
# recognises as a pooler's, and no LISTEN URL marks it as one.
start_replica 2 CTALK_LISTEN_DATABASE_URL= DATABASE_URL="$POOLED_URL&default_query_exec_mode=exec"
wait_healthy 2
out=$("$WORK/driver" wake -ask "$R1" -wait "$R2" -events 100 -pairs 25 -jitter 5s -label "_no_listen_url") ||
  die "wake-ups without CTALK_LISTEN_DATABASE_URL: $out"
echo "$out"
FIGURES+=("$(grep '^RESULT' <<<"$out")")
grep -q "fall back to the 5 s poll" "$WORK/replica2.log" ||
  die "replica 2, listening through PgBouncer, did not say in its log that wake-ups fall back to the poll"
echo "replica 2 logged: $(grep -o 'the LISTEN connection did not hear[^"]*' "$WORK/replica2.log" | head -n 1 | cut -c1-120)…"
stop_replica 2
start_replica 2
wait_healthy 2
sleep 1

# ---- 3. kill -9 under a write load ------------------------------------------------------

# load_start LABEL: the driver's write load in the background, started once
# it is asking; load_end: SIGTERM it and check its verdict.
load_start() {
  "$WORK/driver" load -url "$LB" -workers 6 -duration 5m -label "$1" >"$WORK/load-$1.out" 2>&1 &
  LOAD_PID=$!
  PIDS+=($LOAD_PID)
  local i
  for i in $(seq 1 300); do
    grep -q '^load: asking' "$WORK/load-$1.out" && return 0
    kill -0 "$LOAD_PID" 2>/dev/null || { cat "$WORK/load-$1.out"; die "the load driver ($1) exited before asking"; }
    sleep 0.1
  done
  die "the load driver ($1) did not start asking within 30 s"
}
load_end() {
  local rc=0
  kill -TERM "$LOAD_PID"
  wait "$LOAD_PID" || rc=$?
  cat "$WORK/load-$1.out"
  FIGURES+=("$(grep '^RESULT' "$WORK/load-$1.out" || true)")
  [ "$rc" -eq 0 ] || die "the write load ($1) failed"
}

echo "== kill -9 of replica 3 under a write load through the balancer"
load_start _kill9
sleep 3
kill -KILL "${REPLICA_PID[3]}"
wait "${REPLICA_PID[3]}" 2>/dev/null || true
echo "replica 3 killed (SIGKILL)"
sleep 4
load_end _kill9
start_replica 3
wait_healthy 3
sleep 1

# ---- 4. rolling restart -----------------------------------------------------------------

echo "== rolling restart under a write load (SIGTERM, start, wait healthy; one replica at a time)"
load_start _rolling
sleep 2
for n in 1 2 3; do
  stop_replica "$n"
  start_replica "$n"
  wait_healthy "$n"
  echo "replica $n restarted"
  sleep 1 # HAProxy sees it up again (rise 2 × 300 ms)
done
sleep 1
load_end _rolling

# ---- 5. ctalk bench with 1 and 3 replicas --------------------------------------------------

# bench LABEL: ctalk bench through the balancer; prints its "all" calls/s.
bench() {
  "$WORK/ctalk" bench --url "$LB" --orgs 4 --users 4 --concurrency 16 --duration "$BENCH_DURATION" >"$WORK/bench-$1.out" 2>&1 ||
    { cat "$WORK/bench-$1.out"; die "ctalk bench ($1) failed"; }
  awk '$1 == "all" { print $3 }' "$WORK/bench-$1.out"
}

echo "== ctalk bench through the balancer, 1 replica (2 and 3 stopped)"
stop_replica 2
stop_replica 3
sleep 1 # HAProxy marks them down (fall 2 × 300 ms)
one=$(bench one)
grep -E '^(tool|all) ' "$WORK/bench-one.out"
start_replica 2
start_replica 3
wait_healthy 2
wait_healthy 3
sleep 1
echo "== ctalk bench through the balancer, 3 replicas"
three=$(bench three)
grep -E '^(tool|all) ' "$WORK/bench-three.out"
FIGURES+=("RESULT bench calls_per_s_1_replica=$one calls_per_s_3_replicas=$three ratio=$(awk -v a="$one" -v b="$three" 'BEGIN { printf "%.2f", b / a }')")

echo
echo "== figures ($(nproc) CPUs, PostgreSQL $(psql_admin -c 'SHOW server_version'), $(pgbouncer --version | head -n 1), $(haproxy -v | head -n 1 | cut -d' ' -f1-3))"
printf '%s\n' "${FIGURES[@]}"
echo "replicas: all checks passed"

#!/usr/bin/env bash
# The lease server against etcd, Redis, ZooKeeper and PostgreSQL on this machine (see docs/BENCHMARKS.md).
#
#   peer-benchmarks/run.sh [--quick] [--runs N] [--duration 20s] [--warmup 5s] [--socket-spin-wait 50us] [--skip-build]
#                          [--servers leasehold,leasehold-nosign,redis,etcd,zookeeper,postgresql] [-- HARNESS-OPTIONS]
#
# Installs the Debian packages of the peers if they are missing (etcd-server, redis-server, zookeeper, postgresql-15;
# needs root), builds the lease server and the harness, starts every server on 127.0.0.1 on free ports with its data
# under peer-benchmarks/target/peers/, runs the harness, and stops everything on exit. Results (results.md,
# results.csv, runs.csv, results.png and the servers' logs) go to peer-benchmarks/target/results/.
# --socket-spin-wait sets the socket transport's active wait on both ends (the server's --socket-spin-wait and the
# clients' spinWait; 0 turns it off). --servers starts only the servers listed (default: all), e.g. --servers etcd for
# the etcd systems alone (etcd, leasehold-etcd, etcd-txn, etcd-lease-lock); leasehold-nosign (not in the default)
# starts a second lease server with --no-signing beside the signing one, for the leasehold-nosign systems
# (--servers leasehold,leasehold-nosign measures what signing costs). Anything after "--" goes to the harness as is
# (e.g. -- --systems leasehold,etcd);
# `java -jar peer-benchmarks/target/peer-benchmarks.jar --help` lists its options.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
WORK="$HERE/target/peers"
OUT="$HERE/target/results"

runs=3
duration=20s
warmup=5s
quick=()
build=1
spin_wait=50us
servers=leasehold,redis,etcd,zookeeper,postgresql
harness_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
    --duration) duration="${2:?--duration needs a duration such as 20s}"; shift 2 ;;
    --warmup) warmup="${2:?--warmup needs a duration such as 5s}"; shift 2 ;;
    --socket-spin-wait) spin_wait="${2:?--socket-spin-wait needs a duration such as 50us, or 0}"; shift 2 ;;
    --skip-build) build=0; shift ;;
    --servers) servers="${2:?--servers needs a list such as etcd or leasehold,redis}"; shift 2 ;;
    --) shift; harness_args=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1'; use --quick, --runs N, --duration D, --warmup D, --socket-spin-wait D, --skip-build, --servers LIST, or -- HARNESS-OPTIONS" >&2
       exit 2 ;;
  esac
done

log() { printf '[run.sh] %s\n' "$*" >&2; }

for s in ${servers//,/ }; do
  case "$s" in
    leasehold|leasehold-nosign|redis|etcd|zookeeper|postgresql) ;;
    *) echo "run.sh: unknown server '$s' in --servers; use leasehold, leasehold-nosign, redis, etcd, zookeeper, postgresql" >&2
       exit 2 ;;
  esac
done
serving() { [[ ",$servers," == *",$1,"* ]]; }

# ---------------------------------------------------------------------------------------------- packages
PG_BIN=/usr/lib/postgresql/15/bin
missing=()
wanted=()
tools=()
serving etcd && wanted+=(etcd-server) && tools+=(/usr/bin/etcd)
serving redis && wanted+=(redis-server) && tools+=(/usr/bin/redis-server)
serving zookeeper && wanted+=(zookeeper) && tools+=(/usr/share/java/zookeeper.jar)
serving postgresql && wanted+=(postgresql-15) && tools+=("$PG_BIN/initdb" "$PG_BIN/pg_ctl")
for pkg in "${wanted[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "run.sh: missing Debian packages: ${missing[*]}; install them (apt-get install -y ${missing[*]}) or run as root" >&2
    exit 1
  fi
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi
for tool in "${tools[@]}"; do
  [[ -e "$tool" ]] || { echo "run.sh: $tool is missing although its package is installed; reinstall the package" >&2; exit 1; }
done
# The packages start their own services where there is an init system: ours are separate instances on other ports.

# ---------------------------------------------------------------------------------------------- build
SERVER_JAR="$ROOT/server/target/leasehold-server.jar"
HARNESS_JAR="$HERE/target/peer-benchmarks.jar"
jars=("$HARNESS_JAR")
modules=peer-benchmarks
if serving leasehold || serving leasehold-nosign; then
  jars+=("$SERVER_JAR")
  modules=server,peer-benchmarks
fi
if [[ $build -eq 1 ]]; then
  log "building $modules"
  (cd "$ROOT" && mvn -B -q -pl "$modules" -am package -DskipTests)
fi
for jar in "${jars[@]}"; do
  [[ -f "$jar" ]] || { echo "run.sh: $jar is missing; run without --skip-build" >&2; exit 1; }
done

# ---------------------------------------------------------------------------------------------- servers
rm -rf "$WORK" "$OUT"
mkdir -p "$WORK" "$OUT"

pids=()
pg_started=0
as_postgres=()
if [[ $(id -u) -eq 0 ]]; then
  as_postgres=(runuser -u postgres --)   # PostgreSQL refuses to run as root
fi
cleanup() {
  local rc=$?
  log "stopping the servers"
  if [[ $pg_started -eq 1 ]]; then
    "${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  cp "$WORK"/*.log "$OUT"/ 2>/dev/null || true
  [[ -f "$WORK/pg/postgresql.log" ]] && cp "$WORK/pg/postgresql.log" "$OUT/" 2>/dev/null || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

used_ports=()
free_port() {
  local p
  while true; do
    p=$(( 20000 + RANDOM % 40000 ))
    if [[ " ${used_ports[*]} " == *" $p "* ]]; then continue; fi
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      used_ports+=("$p")
      echo "$p"
      return
    fi
  done
}
wait_port() { # name port seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "run.sh: $1 did not listen on 127.0.0.1:$2 within $3 s; see $WORK/$1.log" >&2
  exit 1
}

REDIS_PORT=$(free_port)
ETCD_PORT=$(free_port)
ETCD_PEER_PORT=$(free_port)
ZK_PORT=$(free_port)
PG_PORT=$(free_port)

addresses=()
if serving redis; then
log "starting redis on $REDIS_PORT"
mkdir -p "$WORK/redis"
# Snapshots off: lock keys are ephemeral, and a fork every minute under load would only slow Redis down.
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$WORK/redis" --save '' --appendonly no \
  --daemonize no --protected-mode yes --logfile "$WORK/redis.log" &
pids+=($!)
addresses+=(--redis "127.0.0.1:$REDIS_PORT")
fi

if serving etcd; then
log "starting etcd on $ETCD_PORT"
etcd --name peers --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "peers=http://127.0.0.1:$ETCD_PEER_PORT" --log-outputs stderr >"$WORK/etcd.log" 2>&1 &
pids+=($!)
addresses+=(--etcd "http://127.0.0.1:$ETCD_PORT")
fi

if serving zookeeper; then
log "starting zookeeper on $ZK_PORT"
mkdir -p "$WORK/zookeeper"
cat >"$WORK/zoo.cfg" <<EOF
tickTime=2000
dataDir=$WORK/zookeeper
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
EOF
java -Xmx1g -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.ZooKeeperServerMain "$WORK/zoo.cfg" \
  >"$WORK/zookeeper.log" 2>&1 &
pids+=($!)
addresses+=(--zookeeper "127.0.0.1:$ZK_PORT")
fi

if serving postgresql; then
log "starting postgresql on $PG_PORT"
mkdir -p "$WORK/pg"
if [[ $(id -u) -eq 0 ]]; then chown postgres: "$WORK/pg"; fi
"${as_postgres[@]}" "$PG_BIN/initdb" -D "$WORK/pg/data" -U postgres -A trust --no-sync >"$WORK/pg/initdb.log" 2>&1 \
  || { cat "$WORK/pg/initdb.log" >&2; exit 1; }
pg_started=1
"${as_postgres[@]}" "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/postgresql.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $WORK/pg -c max_connections=200" start >/dev/null
addresses+=(--postgres "jdbc:postgresql://127.0.0.1:$PG_PORT/postgres")
fi

# No quiet period and no time mark: a fresh server that never granted anything has no earlier leases to outlast, and
# nothing it grants outlives the run.
start_leasehold() { # name option extra-server-options...
  local name=$1 option=$2 port i
  shift 2
  log "starting the $name lease server${*:+ ($*)}"
  java -jar "$SERVER_JAR" --listen 127.0.0.1:0 --socket-listen 127.0.0.1:0 --http-listen none --port-file "$WORK/$name.ports" \
    --quiet-period 0s --no-state-dir --socket-spin-wait "$spin_wait" "$@" \
    >"$WORK/$name.log" 2>&1 &
  pids+=($!)
  for ((i = 0; i < 300; i++)); do
    [[ -s "$WORK/$name.ports" ]] && grep -q '^grpc=' "$WORK/$name.ports" && break
    sleep 0.1
  done
  port=$(sed -n 's/^grpc=//p' "$WORK/$name.ports" 2>/dev/null || true)
  [[ -n "$port" ]] || { echo "run.sh: the $name lease server did not start; see $WORK/$name.log" >&2; cat "$WORK/$name.log" >&2; exit 1; }
  addresses+=("$option" "127.0.0.1:$port")
  wait_port "$name" "$port" 30
}
serving leasehold && start_leasehold leasehold --leasehold
serving leasehold-nosign && start_leasehold leasehold-nosign --leasehold-nosign --no-signing

serving redis && wait_port redis "$REDIS_PORT" 30
serving etcd && wait_port etcd "$ETCD_PORT" 30
serving zookeeper && wait_port zookeeper "$ZK_PORT" 60

# ---------------------------------------------------------------------------------------------- harness
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
before=$(uptime)
log "uptime before: $before"
versions=()
serving etcd && versions+=("etcd $(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')")
serving redis && versions+=("redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')")
serving zookeeper && versions+=("zookeeper $(dpkg-query -W -f='${Version}' zookeeper)")
serving postgresql && versions+=("postgresql $("$PG_BIN/postgres" --version | awk '{print $3}')")
java -Djava.awt.headless=true -Xmx2g -jar "$HARNESS_JAR" \
  "${addresses[@]}" \
  --runs "$runs" --duration "$duration" --warmup "$warmup" "${quick[@]}" \
  --leasehold-spin-wait "$spin_wait" \
  --out "$OUT" \
  --note "machine: $(nproc) cores ($cpu); clients and servers share them" \
  --note "versions: $(IFS=,; echo "${versions[*]}" | sed 's/,/, /g')" \
  --note "uptime before: $before" \
  "${harness_args[@]}"
after=$(uptime)
log "uptime after: $after"
printf -- '\n- uptime after: %s\n' "$after" >>"$OUT/results.md"
log "results in $OUT"

#!/usr/bin/env bash
# The XA benchmark of the ledger runner, with its PostgreSQL baseline: installs PostgreSQL from Debian's packages if
# it is missing, starts a fresh cluster under samples/ledger-runner/target/ on 127.0.0.1 (a free port, fsync=on,
# synchronous_commit=on, max_prepared_transactions > 0 for XA), creates the database, tables and lock rows, builds
# the runner and runs it in bench mode (Payara Micro with Leasehold and an XA datasource on this PostgreSQL), then
# stops PostgreSQL. Arguments go to the runner (its defaults are the documented workloads: 16 clients over 100000
# keys, 16 over 4, 1 over 100000; 10 s warm-up; 3 runs of 20 s per side), e.g.
#   samples/ledger-runner/bench/run-postgres-bench.sh --runs=1 --duration=PT5S
# With --lease-server first, the adapter runs in remote mode: the script starts a lease server on 127.0.0.1 (a free
# port, no state, no quiet period; stopped on exit) and gives the runner --bench-lease-service=remote:127.0.0.1:PORT.
# Not part of CI. See bench/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(dirname "$here")"
repo="$(cd "$module/../.." && pwd)"
work="$module/target/postgres-bench"
data="$work/data"
pg_log="$work/postgres.log"
# Lock rows 0 .. BENCH_LOCK_ROWS-1: at least the largest --bench-keys.
lock_rows="${BENCH_LOCK_ROWS:-100000}"
pg_major="${PG_MAJOR:-15}"

pg_started=""
runner_pid=""
server_pid=""
lease_server=""
if [ "${1:-}" = "--lease-server" ]; then
    lease_server=yes
    shift
fi

as_postgres() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

cleanup() {
    local status=$?
    if [ -n "$runner_pid" ] && kill -0 "$runner_pid" 2>/dev/null; then
        echo "Stopping the runner (pid $runner_pid)..." >&2
        kill -TERM "$runner_pid" 2>/dev/null || true
        wait "$runner_pid" 2>/dev/null || true
    fi
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        echo "Stopping the lease server (pid $server_pid)..." >&2
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [ -n "$pg_started" ]; then
        echo "Stopping PostgreSQL..." >&2
        if ! as_postgres "$pg_bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null; then
            if [ -f "$data/postmaster.pid" ]; then
                kill -TERM "$(head -1 "$data/postmaster.pid")" 2>/dev/null || true
            fi
        fi
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. PostgreSQL from Debian's packages (the 'postgresql' package depends on the distribution's major version).
pg_bin="/usr/lib/postgresql/$pg_major/bin"
if [ ! -x "$pg_bin/postgres" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "PostgreSQL $pg_major is not installed ($pg_bin/postgres is missing) and installing it needs root:" \
            "apt-get install -y postgresql-$pg_major" >&2
        exit 1
    fi
    echo "Installing PostgreSQL from Debian's packages..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    if [ ! -x "$pg_bin/postgres" ]; then
        echo "apt-get installed PostgreSQL, but not version $pg_major: set PG_MAJOR to one of:" \
            /usr/lib/postgresql/* >&2
        exit 1
    fi
fi
# Debian's package starts a cluster of its own on 5432; this script neither uses nor touches it.

# 2. A fresh cluster under target/, owned by the postgres user (PostgreSQL refuses to run as root). A cluster an
# interrupted run left running there is stopped first.
if [ -f "$data/postmaster.pid" ] && kill -0 "$(head -1 "$data/postmaster.pid")" 2>/dev/null; then
    as_postgres "$pg_bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
fi
rm -rf "$work"
mkdir -p "$work"
superuser_password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
bench_password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$superuser_password" > "$work/superuser.pw"
chmod 600 "$work/superuser.pw"
if [ "$(id -u)" = 0 ]; then
    chown -R postgres: "$work"
fi
as_postgres "$pg_bin/initdb" -D "$data" -U postgres --auth-local=reject --auth-host=scram-sha-256 \
    --pwfile="$work/superuser.pw" -E UTF8 --locale=C.UTF-8 >"$work/initdb.log"
rm -f "$work/superuser.pw"

port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
port=""
for _ in $(seq 1 50); do
    candidate=$((20000 + RANDOM % 40000))
    if port_free "$candidate"; then
        port="$candidate"
        break
    fi
done
[ -n "$port" ] || { echo "no free port found on 127.0.0.1" >&2; exit 1; }

# Durable commits as PostgreSQL ships them (fsync, synchronous commit, full page writes); XA needs prepared
# transactions; TCP on loopback only, no Unix socket.
cat >>"$data/postgresql.conf" <<CONF

# run-postgres-bench.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
fsync = on
synchronous_commit = on
full_page_writes = on
max_prepared_transactions = 100
max_connections = 100
CONF
echo "Starting PostgreSQL $pg_major on 127.0.0.1:$port (data: $data, log: $pg_log)..."
pg_started=yes
as_postgres "$pg_bin/pg_ctl" -D "$data" -l "$pg_log" -w -t 60 start >/dev/null

psql_as() {
    local user="$1" password="$2"
    shift 2
    PGPASSWORD="$password" "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$user" "$@"
}
psql_as postgres "$superuser_password" -d postgres \
    -c "CREATE ROLE bench LOGIN PASSWORD '$bench_password'" -c "CREATE DATABASE bench OWNER bench"
psql_as bench "$bench_password" -d bench -v keys="$lock_rows" -f "$here/postgres-schema.sql"
echo "Database bench ready: $lock_rows lock rows."

# 3. Build the runner and what it deploys (no install: a reactor build), then run the benchmark.
echo "Building..."
(cd "$repo" && mvn -q -B -pl samples/ledger-runner$([ -n "$lease_server" ] && echo ,server) -am package -DskipTests)
lease_args=()
if [ -n "$lease_server" ]; then
    ports="$work/lease-server.ports"
    rm -f "$ports"
    java -jar "$repo/server/target/leasehold-server.jar" --listen 127.0.0.1:0 --http-listen none --no-state-dir \
        --quiet-period 0s --port-file "$ports" >"$work/lease-server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 300); do
        [ -s "$ports" ] && grep -q '^socket=' "$ports" && break
        kill -0 "$server_pid" 2>/dev/null || { echo "the lease server did not start: see $work/lease-server.log" >&2; exit 1; }
        sleep 0.1
    done
    grpc_port="$(sed -n 's/^grpc=//p' "$ports")"
    [ -n "$grpc_port" ] || { echo "the lease server wrote no port: see $work/lease-server.log" >&2; exit 1; }
    echo "Lease server on 127.0.0.1:$grpc_port (log: $work/lease-server.log); the adapter runs in remote mode."
    lease_args=(--bench-lease-service="remote:127.0.0.1:$grpc_port")
fi
export PGPASSWORD="$bench_password"
java -cp "$module/target/classes:$(cat "$module/target/runner.classpath")" \
    org.leasehold.samples.ledger.runner.LedgerRunner \
    --sample-dir="$module/target/sample" --workload=bench \
    --pg-url="jdbc:postgresql://127.0.0.1:$port/bench" --pg-user=bench "${lease_args[@]}" "$@" &
runner_pid=$!
status=0
wait "$runner_pid" || status=$?
runner_pid=""

# 4. The disk's own sync latency, right after the runs, on the file system of the bag store and the cluster: with one
# client nothing that commits durably can take less than the floor's transaction plus one such sync (BENCHMARKS.md,
# "What one client can reach"). PostgreSQL's own tool, 2 s per method; its test file is removed.
echo
echo "The disk's sync latency after the runs (pg_test_fsync -s 2, one 8 kB write; a file in $work):"
if "$pg_bin/pg_test_fsync" -s 2 -f "$work/pg_test_fsync.out" >"$work/pg_test_fsync.log" 2>&1; then
    sed -n '/one 8kB write/,/^$/p' "$work/pg_test_fsync.log" | grep -E '^[[:space:]]+(open_datasync|fdatasync|fsync|open_sync) ' || true
else
    echo "pg_test_fsync failed (see $work/pg_test_fsync.log); the figures above stand without it" >&2
fi
rm -f "$work/pg_test_fsync.out"
exit "$status"

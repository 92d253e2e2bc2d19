-- The PostgreSQL side of the XA benchmark (samples/ledger-runner, --workload=bench): one lock row per key, which a
-- transaction locks with SELECT ... FOR UPDATE, and the table its 256-byte message goes to.
-- psql -v keys=100000 -f postgres-schema.sql  (run-postgres-bench.sh does this on a fresh cluster)
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS bench_message;
DROP TABLE IF EXISTS bench_lock;
CREATE TABLE bench_lock (
    k integer PRIMARY KEY
);
INSERT INTO bench_lock (k) SELECT g FROM generate_series(0, :keys - 1) AS g;
CREATE TABLE bench_message (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    k integer NOT NULL,
    payload bytea NOT NULL
);
VACUUM ANALYZE bench_lock;

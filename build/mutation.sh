#!/usr/bin/env bash
# Mutation testing of the safety core with PIT (docs/TESTING.md, "Mutation testing").
#
#   build/mutation.sh [GROUP...]             GROUP: engine, store, adapter, server (default: all four)
#   build/mutation.sh --summary [GROUP...]   only the summary, from the groups' last reports
#
# Runs the `mutation` profile on each group (the group's classes mutated, the group's own fast tests run against
# each mutant; tests that start child JVMs and long randomized histories are excluded), then prints a summary table
# per group and package: mutations, killed (time-outs counted apart, not as kills), timed out, survived, no
# coverage, strength (killed without time-outs / covered mutations), and writes it into docs/TESTING.md with the
# date, the machine's cores, its load average and the run's minutes, replacing that group's previous table.
# Reports: target/mutation/<group>/ (PIT's HTML and mutations.xml).
# PIT_CLASSES overrides a group's classes (to try one class; the docs are then left alone); PIT_THREADS sets PIT's
# worker threads (default 2; 1 when several runs share the machine); MVN_OPTS adds Maven options (e.g. -o).
# Needs Java 17, Maven and python3. Takes tens of minutes per group on two cores: run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A MODULE CLASSES TESTS
MODULE[engine]=impl
CLASSES[engine]='org.leasehold.engine.*'
TESTS[engine]='org.leasehold.engine.*'
MODULE[store]=impl
CLASSES[store]='org.leasehold.store.WriteRule*,org.leasehold.store.Appender*,org.leasehold.store.LatenessCheck*,org.leasehold.store.PendingAppend*,org.leasehold.store.FileRunWriter*,org.leasehold.store.Sealer*,org.leasehold.store.LogReader*,org.leasehold.store.FileCursor*,org.leasehold.store.format.*'
# The store's fast tests (the views' and retention races' tests take tens of seconds per mutant); ViewSnapshotFileTest
# is the only test of the snapshot format (store.format.ViewSnapshotFile), which is mutated with the rest of the format;
# DiskFullTest is the only one whose writes fail (a full tmpfs; it needs root and skips otherwise).
TESTS[store]='org.leasehold.store.WriteRule*,org.leasehold.store.ViewSnapshotFileTest,org.leasehold.store.TextFormatsTest,org.leasehold.store.AppenderEdgesTest,org.leasehold.store.SealedLockTest,org.leasehold.store.FileCursorEdgesTest,org.leasehold.store.DiskFullTest,org.leasehold.store.SealerTest,org.leasehold.store.SegmentFileTest,org.leasehold.store.FrameStructureTest,org.leasehold.store.SealingTest,org.leasehold.store.AppendReadTest,org.leasehold.store.FormatTest,org.leasehold.store.StoreReaderTest,org.leasehold.store.BadInputTest,org.leasehold.store.WriterExclusionTest,org.leasehold.store.StorePartsTest,org.leasehold.store.SegmentsTest,org.leasehold.store.DamagedReadTest,org.leasehold.store.RetentionTest,org.leasehold.store.ReaderEdgesTest'
MODULE[adapter]=impl
CLASSES[adapter]='org.leasehold.adapter.XaBranches*,org.leasehold.adapter.Completion*,org.leasehold.adapter.Recovery*,org.leasehold.adapter.Settlement*,org.leasehold.adapter.PrepareJournal*,org.leasehold.adapter.UnitCalls*,org.leasehold.adapter.Units*,org.leasehold.adapter.WriteReadiness*,org.leasehold.adapter.LeaseholdXAResource*'
# The adapter's tests of the XA contract, the prepare journal, transactions, unit calls, misuse, sessions and
# ownership (the views', signing's, flight recorder's and configuration's tests take seconds each and drive no XA or
# recovery path the others do not).
TESTS[adapter]='org.leasehold.adapter.AdapterXaContractTest,org.leasehold.adapter.PrepareJournalTest,org.leasehold.adapter.AdapterUnitCallsTest,org.leasehold.adapter.AdapterTransactionTest,org.leasehold.adapter.AdapterMisuseTest,org.leasehold.adapter.AdapterSessionEventsTest,org.leasehold.adapter.EmbeddedClockStepTest,org.leasehold.adapter.EmbeddedOwnershipTest,org.leasehold.adapter.AdapterBackendHealthTest,org.leasehold.adapter.AdapterHealthTest'
MODULE[server]=server
CLASSES[server]='org.leasehold.server.RequestChecks*,org.leasehold.server.LeaseAccess*,org.leasehold.server.AccessControl*,org.leasehold.server.Credentials*,org.leasehold.server.CallGate*'
# The server's in-process tests of its checks and decoding (not the restarts, TLS, or the long contract runs:
# RemoteLeaseServiceContractTest and TlsTest serve from a child JVM, which loads the unmutated classes, so they cannot
# kill a mutant; their checks are asserted in process by AccessChecksTest, CallGateTest and the tests below).
TESTS[server]='org.leasehold.server.AccessChecksTest,org.leasehold.server.CallGateTest,org.leasehold.server.RequestRangesTest,org.leasehold.server.ServerGuardsTest,org.leasehold.server.RequestIdsTest,org.leasehold.server.PrincipalBindingTest,org.leasehold.server.ServerConfigTest,org.leasehold.server.GrantOwnersTest'

summary_only=false
if [ "${1:-}" = --summary ]; then
  summary_only=true
  shift
fi
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(engine store adapter server)
for g in "${groups[@]}"; do
  [ -n "${MODULE[$g]:-}" ] || { echo "mutation.sh: unknown group '$g'; use engine, store, adapter or server" >&2; exit 2; }
done

for g in "${groups[@]}"; do
  $summary_only && break
  out="$PWD/target/mutation/$g"
  rm -rf "$out"; mkdir -p "$out"
  echo "== $g: mutating ${PIT_CLASSES:-${CLASSES[$g]}} in ${MODULE[$g]}" >&2
  read -r load1 _ < /proc/loadavg
  began=$(date -u +%s)
  # -am builds what the module needs from this tree; PIT finds nothing to mutate in those and moves on.
  mvn -B ${MVN_OPTS:-} -Pmutation -pl "${MODULE[$g]}" -am -Dcheckstyle.skip -Dpit.threads="${PIT_THREADS:-2}" \
    -DtargetClasses="${PIT_CLASSES:-${CLASSES[$g]}}" -DtargetTests="${TESTS[$g]}" -DreportsDirectory="$out" \
    test-compile org.pitest:pitest-maven:mutationCoverage > "$out/pit.log" 2>&1 \
    || { echo "mutation.sh: PIT failed for $g; see $out/pit.log" >&2; exit 1; }
  read -r load2 _ < /proc/loadavg
  printf '%s %s %s %s %s\n' "$(date -u +%F)" "$(nproc)" "$load1" "$load2" "$(( ($(date -u +%s) - began + 59) / 60 ))" \
    > "$out/run.txt"
done

# The summary: printed, and written into docs/TESTING.md (one block per group, replacing that group's last one)
# unless PIT_CLASSES narrowed the run.
python3 - "$([ -n "${PIT_CLASSES:-}" ] && echo print || echo write)" "${groups[@]}" <<'PY'
import collections, re, sys
import xml.etree.ElementTree as ET

mode, groups = sys.argv[1], sys.argv[2:]
blocks = {}
for g in groups:
    rows = collections.OrderedDict()
    for m in ET.parse(f"target/mutation/{g}/mutations.xml").getroot().iter("mutation"):
        pkg = m.findtext("mutatedClass").rsplit(".", 1)[0]
        r = rows.setdefault(pkg, collections.Counter())
        r["mutations"] += 1
        r[m.get("status")] += 1
    day, cores, load1, load2, minutes = open(f"target/mutation/{g}/run.txt").read().split()
    lines = [f"<!-- mutation:{g} -->",
             f"`{g}`, {day}: {cores} cores, load average {load1} at the start and {load2} at the end, {minutes} min; "
             f"`build/mutation.sh {g}`.",
             "",
             "| package | mutations | killed | timed out | survived | no coverage | strength |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for pkg, r in sorted(rows.items()):
        killed = r["KILLED"]
        covered = r["mutations"] - r["NO_COVERAGE"]
        strength = 100.0 * killed / covered if covered else 0.0
        other = r["mutations"] - killed - r["TIMED_OUT"] - r["SURVIVED"] - r["NO_COVERAGE"]
        note = f" ({other} other: memory or run errors)" if other else ""
        lines.append(f"| `{pkg}` | {r['mutations']} | {killed} | {r['TIMED_OUT']} | {r['SURVIVED']} | "
                     f"{r['NO_COVERAGE']} | {strength:.1f} %{note} |")
    lines.append(f"<!-- /mutation:{g} -->")
    blocks[g] = "\n".join(lines)
    print(blocks[g])
    print()
if mode == "write":
    path = "docs/TESTING.md"
    text = open(path).read()
    for g, block in blocks.items():
        pattern = re.compile(rf"<!-- mutation:{g} -->.*?<!-- /mutation:{g} -->", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _: block, text)
        else:
            marker = "<!-- mutation:results -->"
            if marker not in text:
                sys.exit(f"mutation.sh: {path} has no '{marker}' line to put the '{g}' table after")
            text = text.replace(marker, marker + "\n\n" + block, 1)
    open(path, "w").write(text)
    print(f"written into {path}", file=sys.stderr)
PY

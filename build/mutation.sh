#!/usr/bin/env bash
# Mutation testing of the safety core with PIT (docs/TESTING.md, "Mutation testing").
#
#   build/mutation.sh [GROUP...]     GROUP: engine, store, adapter, server (default: all four)
#
# Runs the `mutation` profile on each group (the group's classes mutated, the group's own tests run against each
# mutant; tests that start child JVMs are excluded), then prints one summary table over all groups run:
# mutations, killed (time-outs counted apart, not as kills), survived, no coverage, strength (killed without
# time-outs / covered mutations). Reports: target/mutation/<group>/ (PIT's HTML and mutations.xml).
# PIT_CLASSES overrides a group's classes (to try one class); MVN_OPTS adds Maven options (e.g. -o).
# Needs Java 17, Maven and python3. Takes tens of minutes per group on two cores: run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A MODULE CLASSES TESTS
MODULE[engine]=impl
CLASSES[engine]='org.leasehold.engine.*'
TESTS[engine]='org.leasehold.engine.*'
MODULE[store]=impl
CLASSES[store]='org.leasehold.store.WriteRule*,org.leasehold.store.Appender*,org.leasehold.store.LatenessCheck*,org.leasehold.store.PendingAppend*,org.leasehold.store.FileRunWriter*,org.leasehold.store.Sealer*,org.leasehold.store.LogReader*,org.leasehold.store.FileCursor*,org.leasehold.store.format.*'
TESTS[store]='org.leasehold.store.*'
MODULE[adapter]=impl
CLASSES[adapter]='org.leasehold.adapter.XaBranches*,org.leasehold.adapter.Completion*,org.leasehold.adapter.Recovery*,org.leasehold.adapter.Settlement*,org.leasehold.adapter.PrepareJournal*,org.leasehold.adapter.UnitCalls*,org.leasehold.adapter.Units*,org.leasehold.adapter.WriteReadiness*,org.leasehold.adapter.LeaseholdXAResource*'
TESTS[adapter]='org.leasehold.adapter.*'
MODULE[server]=server
CLASSES[server]='org.leasehold.server.RequestChecks*,org.leasehold.server.LeaseAccess*,org.leasehold.server.AccessControl*,org.leasehold.server.Credentials*,org.leasehold.server.CallGate*'
TESTS[server]='org.leasehold.server.*'

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(engine store adapter server)
for g in "${groups[@]}"; do
  [ -n "${MODULE[$g]:-}" ] || { echo "mutation.sh: unknown group '$g'; use engine, store, adapter or server" >&2; exit 2; }
done

for g in "${groups[@]}"; do
  out="$PWD/target/mutation/$g"
  rm -rf "$out"; mkdir -p "$out"
  echo "== $g: mutating ${PIT_CLASSES:-${CLASSES[$g]}} in ${MODULE[$g]}" >&2
  # -am builds what the module needs from this tree; PIT finds nothing to mutate in those and moves on.
  mvn -B ${MVN_OPTS:-} -Pmutation -pl "${MODULE[$g]}" -am -Dcheckstyle.skip \
    -DtargetClasses="${PIT_CLASSES:-${CLASSES[$g]}}" -DtargetTests="${TESTS[$g]}" -DreportsDirectory="$out" \
    test-compile org.pitest:pitest-maven:mutationCoverage > "$out/pit.log" 2>&1 \
    || { echo "mutation.sh: PIT failed for $g; see $out/pit.log" >&2; exit 1; }
done

python3 - "${groups[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET, collections, datetime, os
rows = collections.OrderedDict()
for g in sys.argv[1:]:
    root = ET.parse(f"target/mutation/{g}/mutations.xml").getroot()
    for m in root.iter("mutation"):
        pkg = m.findtext("mutatedClass").rsplit(".", 1)[0]
        r = rows.setdefault((g, pkg), collections.Counter())
        r["mutations"] += 1
        r[m.get("status")] += 1
print(f"Mutation testing, {datetime.date.today()}, {os.cpu_count()} cores")
print()
print("| group | package | mutations | killed | timed out | survived | no coverage | strength |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for (g, pkg), r in rows.items():
    killed, timed, survived = r["KILLED"], r["TIMED_OUT"], r["SURVIVED"]
    covered = r["mutations"] - r["NO_COVERAGE"]
    strength = 100.0 * killed / covered if covered else 0.0
    print(f"| {g} | `{pkg}` | {r['mutations']} | {killed} | {timed} | {survived} | {r['NO_COVERAGE']} | {strength:.0f} % |")
PY

#!/usr/bin/env bash
# The fault campaign (docs/RELIABILITY.md): a lease server, writers, sealers, a compactor and a reader in their own
# processes, faults injected at random times from a seed, and an independent checker of the stored bytes.
#
#   fault-campaign/run.sh [--minutes N] [--seed S]
#
# Defaults: 3 minutes (the CI run), a new seed (printed). The summary and the fault trace are written to
# fault-campaign/target/campaign*/summary.txt; the exit code is non-zero on any violation.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=3
seed=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown option $1; use --minutes N and --seed S" >&2; exit 2 ;;
  esac
done
exec mvn -B -pl fault-campaign -am verify -Dtest=FaultCampaignTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Dcampaign.minutes="$minutes" -Dcampaign.seed="$seed" -Dsurefire.timeout=0

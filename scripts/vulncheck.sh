#!/usr/bin/env bash
# vulncheck.sh: govulncheck against a vulnerability database, or one loud
# line saying it did not run. A machine without a route to vuln.go.dev (a
# sandboxed CI runner, say) cannot check; that is said plainly, and the
# lint passes on what it could check, rather than failing on the network
# or printing a clean result it never computed.
#
# usage: scripts/vulncheck.sh '<govulncheck command>' <GOVULNDB>
#   GOVULNDB is https://vuln.go.dev, a mirror, or file:///path/to/a/copy
set -euo pipefail
govulncheck=$1 db=$2

reachable() {
  case $db in
  file://*) [[ -f ${db#file://}/index/db.json || -f ${db#file://}/index/db.json.gz ]] ;;
  http://* | https://*) curl -fsS --max-time 10 -o /dev/null "$db/index/db.json.gz" 2>/dev/null ;;
  *) return 1 ;;
  esac
}

if ! reachable; then
  echo "govulncheck: NOT RUN: the vulnerability database $db cannot be reached" \
    "(point GOVULNDB at a reachable mirror or a file:// copy to run it)"
  exit 0
fi
$govulncheck -db "$db" ./...

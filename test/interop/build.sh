#!/usr/bin/env bash
# Installs the official Python A2A SDK the interop suite drives (test/interop/python-sdk.test.ts)
# into a venv: a2a-sdk[grpc,http-server] at the version pinned below, from PyPI, into
# <repo>/.cache/a2a-py (override with A2A_PY_DIR).
#
# Idempotent: when the venv's a2a-sdk is already that version, nothing is done. Concurrent runs wait
# for each other (flock). Prints the time of each step. Exit codes: 0 ok, 2 python3 (with venv) is
# missing, other = install error.
set -euo pipefail
main() {
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${A2A_PY_DIR:-$ROOT/.cache/a2a-py}"
VERSION=1.3.0
START=$(date +%s)
log() { printf '[a2a-py %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
up_to_date() {
  "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('a2a-sdk') != '$VERSION')" 2>/dev/null
}
if up_to_date; then log "a2a-sdk $VERSION is installed in $VENV"; exit 0; fi
command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null || {
  log "ERROR: python3 with the venv module is needed for the Python A2A SDK (Debian: apt-get install python3-venv)"; exit 2; }
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another install is running; waiting ..."; flock 9; }
  if up_to_date; then log "installed by a concurrent run"; exit 0; fi
fi
log "creating the venv $VENV ..."
python3 -m venv --clear "$VENV"
log "installing a2a-sdk[grpc,http-server]==$VERSION from PyPI ..."
nice -n 10 "$VENV/bin/pip" install --quiet --disable-pip-version-check "a2a-sdk[grpc,http-server]==$VERSION"
up_to_date || { log "ERROR: a2a-sdk $VERSION is not importable from $VENV after the install"; exit 1; }
log "done in $(( $(date +%s) - START ))s: $VENV"
}
main "$@"

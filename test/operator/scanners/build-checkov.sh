#!/usr/bin/env bash
# Installs checkov (PyPI, a static checker of infrastructure code, Kubernetes objects among them)
# into a venv at <repo>/.cache/scanners/checkov (override with SCANNERS_DIR), for
# test/operator/scanners.test.ts and .ci/run.
#
# Idempotent: nothing is done when the venv already holds that exact version. Exit codes: 0 ok,
# 2 python3 (with venv) missing, other = install error.
set -euo pipefail
VERSION=3.3.30
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
DIR="${SCANNERS_DIR:-$ROOT/.cache/scanners}"
VENV="$DIR/checkov"
START=$(date +%s)
log() { printf '[checkov-install %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
installed() { "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('checkov') != '$VERSION')" 2>/dev/null; }
if installed; then log "checkov $VERSION up to date in $VENV"; exit 0; fi
command -v python3 >/dev/null 2>&1 || { log "ERROR: python3 is needed to install checkov $VERSION from PyPI"; exit 2; }
mkdir -p "$DIR"
exec 9>"$DIR/.checkov.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another install is running; waiting ..."; flock 9; }
  if installed; then log "installed by a concurrent run"; exit 0; fi
fi
rm -rf "$VENV"
python3 -m venv "$VENV" || { log "ERROR: python3 -m venv failed (Debian: apt-get install python3-venv)"; exit 2; }
log "installing checkov $VERSION ..."
nice -n 10 "$VENV/bin/pip" install --quiet --disable-pip-version-check "checkov==$VERSION"
installed || { log "ERROR: checkov $VERSION is not importable after the install"; exit 1; }
log "done in $(( $(date +%s) - START ))s: $VENV/bin/checkov"

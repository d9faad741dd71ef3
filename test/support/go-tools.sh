# Sourced by the scripts that build test tools from the Go module proxy (test/oci/build.sh,
# test/prometheus/build.sh, test/operator/scanners/build-kube-score.sh): the one frame they share —
# a stamp that says the binaries are current, a lock so concurrent runs build once, a temporary
# folder the binaries are built into and moved from, and a line with the time of each step. The caller says what to build; this says when and how.
#
#   go_tools_build LABEL BIN STAMP_NAME STAMP_WANT BUILD_FN TOOL...
# LABEL names the log lines; BIN is the folder the TOOLs land in; STAMP_NAME the stamp and lock
# files' base name in BIN; STAMP_WANT what the stamp must say (this file's digest is added to it);
# BUILD_FN TMP TOOL builds one TOOL into the folder TMP (at nice 10: the machine is shared).
# Exits 0 when done or current, 2 when Go is missing; a build error exits with the build's status
# (the callers run under set -e).
go_tools_build() {
  local label="$1" bin="$2" stamp_name="$3" want="$4 lib=$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-16)" build_fn="$5"
  shift 5
  local tools=("$@") start tool
  start=$(date +%s)
  _gt_log() { printf '[%s %s] %s\n' "$label" "$(date +%H:%M:%S)" "$*" >&2; }
  _gt_current() {
    [[ -f "$bin/.$stamp_name.stamp" && "$(head -n1 "$bin/.$stamp_name.stamp")" == "$want" ]] || return 1
    for tool in "${tools[@]}"; do [[ -x "$bin/$tool" ]] || return 1; done
  }
  if [[ "${FORCE:-0}" != 1 ]] && _gt_current; then _gt_log "up to date in $bin"; return 0; fi
  command -v go >/dev/null 2>&1 || { _gt_log "ERROR: Go (>= 1.26) is needed to build ${tools[*]} from the Go module proxy"; exit 2; }
  mkdir -p "$bin"
  exec 9>"$bin/.$stamp_name.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -n 9 || { _gt_log "another build is running; waiting ..."; flock 9; }
    if [[ "${FORCE:-0}" != 1 ]] && _gt_current; then _gt_log "built by a concurrent run"; return 0; fi
  fi
  _GT_TMP="$(mktemp -d "$bin/.build.XXXXXX")"
  trap 'rm -rf "$_GT_TMP"' EXIT
  for tool in "${tools[@]}"; do
    local t0
    t0=$(date +%s)
    _gt_log "building $tool ..."
    "$build_fn" "$_GT_TMP" "$tool"
    _gt_log "built $tool in $(( $(date +%s) - t0 ))s (total $(( $(date +%s) - start ))s)"
  done
  for tool in "${tools[@]}"; do mv -f "$_GT_TMP/$tool" "$bin/$tool"; done
  { echo "$want"; echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version)"; } >"$bin/.$stamp_name.stamp"
  _gt_log "done in $(( $(date +%s) - start ))s: ${tools[*]/#/$bin/}"
}

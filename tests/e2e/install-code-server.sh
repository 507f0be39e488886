#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100.3, the last line that runs on Node 20)
# into a cache folder for the end-to-end test; this script is the recipe, checked on the
# project's Debian machines. A plain `npm install code-server` fails
# as root (postinstall wants unsafe-perm) and downloads ripgrep from the internet,
# so the postinstall is done by hand here.
#
# Usage: tests/e2e/install-code-server.sh [CACHE_DIR]
# Prints the path of entry.js on its last line. Reuses a finished install.
set -euo pipefail

VERSION=4.100.3
CACHE="${1:-${GRAPHLIFE_E2E_CACHE:-$HOME/.cache/graphlife-e2e}}"
ROOT="$CACHE/code-server-$VERSION"
CS="$ROOT/node_modules/code-server"
STAMP="$ROOT/.installed"

if [ -f "$STAMP" ] && [ -f "$CS/out/node/entry.js" ]; then
  echo "$CS/out/node/entry.js"
  exit 0
fi

# node-gyp builds the native modules (kerberos, node-pty, spdlog, ...): it needs make,
# a C++ compiler and python3.
for tool in npm node rg make g++ python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-code-server: '$tool' is missing (apt-get install ripgrep libkrb5-dev chromium make g++ python3; Node 20 with npm)" >&2
    exit 1
  fi
done
case "$(node --version)" in
  v20.*) ;;
  *) echo "install-code-server: code-server $VERSION runs on Node 20; this is Node $(node --version)" >&2 ;;
esac

log() { echo "install-code-server: $*" >&2; }
mkdir -p "$ROOT"
cd "$ROOT"
[ -f package.json ] || echo '{"name":"graphlife-e2e-code-server","private":true}' > package.json

log "1/7 npm install code-server@$VERSION (no scripts)"
npm install "code-server@$VERSION" --ignore-scripts --no-audit --no-fund --loglevel=error >&2

log "2/7 code-server's own dependencies"
(cd "$CS" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2 && npm rebuild argon2 >&2)

log "3/7 VS Code's dependencies"
(cd "$CS/lib/vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)

log "4/7 ripgrep from the system instead of a download"
mkdir -p "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin"
cp "$(command -v rg)" "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"

log "5/7 native modules (the Windows-only ones are not needed)"
(cd "$CS/lib/vscode" && npm_config_yes=true npm rebuild --ignore-scripts=false \
  @parcel/watcher @vscode/deviceid @vscode/spdlog kerberos native-watchdog node-pty >&2)

log "6/7 the links the postinstall would make"
(cd "$CS/lib/vscode" && ln -sfn node_modules node_modules.asar)
(cd "$CS/lib/vscode/bin/remote-cli" && ln -sfn code-linux.sh code-server)
(cd "$CS/lib/vscode/bin/helpers" && ln -sfn browser-linux.sh browser.sh)

log "7/7 built-in extensions"
(cd "$CS/lib/vscode/extensions" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)

version="$(node "$CS/out/node/entry.js" --version)"
case "$version" in
  *"$VERSION"*) log "ok: $version" ;;
  *) log "unexpected version output: $version"; exit 1 ;;
esac
touch "$STAMP"
echo "$CS/out/node/entry.js"

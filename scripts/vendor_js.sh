#!/usr/bin/env bash
# Vendor the graph library used by `keymem viz` into keymem/cli/static/ (run at build time;
# the result is committed so that `pip install keymem` never needs npm).
# Usage: scripts/vendor_js.sh [VERSION]   (default: the pinned version below)
set -euo pipefail
VERSION="${1:-3.35.0}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/keymem/cli/static"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm pack "cytoscape@${VERSION}" --silent >/dev/null
tar -xzf "cytoscape-${VERSION}.tgz"
mkdir -p "$DEST"
cp package/dist/cytoscape.min.js "$DEST/cytoscape.min.js"
cp package/LICENSE "$DEST/cytoscape.LICENSE"
echo "cytoscape ${VERSION}" > "$DEST/VERSIONS"
echo "vendored cytoscape ${VERSION} into $DEST"

#!/bin/sh
# lib/fuxi-run of an installation (make dist): `fuxi-run NAME FILE ARGS...` runs program NAME, FILE
# relative to the installation, with the host's Node.js, which must be 20.19 or newer. The bin/
# wrappers call it.
#   FUXI_NODE       the node binary (default: `node` on PATH)
#   FUXI_NODE_ARGS  options for Node itself, e.g. --max-semi-space-size=64 (fuxi-master.service)
root=$(dirname "$(dirname "$(readlink -f "$0")")")
name=$1
prog=$2
shift 2
node=${FUXI_NODE:-$(command -v node)}
if [ -z "$node" ]; then
  echo "fuxi: Node.js 20.19 or newer is needed to run $name, and there is no node on PATH ($PATH); set FUXI_NODE to its path" >&2
  exit 127
fi
v=$("$node" --version 2>/dev/null)
major=${v#v}
major=${major%%.*}
minor=${v#v*.}
minor=${minor%%.*}
case "$major.$minor" in
  *[!0-9.]* | .* | *.) ok=no ;;
  *) if [ "$major" -gt 20 ] || { [ "$major" -eq 20 ] && [ "$minor" -ge 19 ]; }; then ok=yes; else ok=no; fi ;;
esac
if [ "$ok" != yes ]; then
  echo "fuxi: $node is Node.js ${v:-of unknown version}; $name needs 20.19 or newer (install it, or set FUXI_NODE to such a node binary)" >&2
  exit 127
fi
# shellcheck disable=SC2086 # FUXI_NODE_ARGS is a list of options
exec "$node" $FUXI_NODE_ARGS "$root/$prog" "$@"

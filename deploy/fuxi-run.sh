#!/bin/sh
# lib/fuxi-run of an installation (make dist): `fuxi-run NAME FILE ARGS...` runs program NAME, FILE
# relative to the installation, with the host's Node.js, which must be 20.19 or newer. The bin/
# wrappers call it.
#   FUXI_NODE       the node binary (default: `node` on PATH)
#   FUXI_NODE_ARGS  options for Node itself, e.g. --max-semi-space-size=64 (fuxi-master.service)
p=$(readlink -f "$0")
root=${p%/lib/*}
name=$1
prog=$2
shift 2
node=${FUXI_NODE:-$(command -v node)}
if [ -z "$node" ]; then
  echo "fuxi: Node.js 20.19 or newer is needed to run $name, and there is no node on PATH ($PATH); set FUXI_NODE to its path" >&2
  exit 127
fi
# The bundled programs (*.cjs: fuxi, fuxi-appmaster, fuxi-amhost) check the version themselves
# (scripts/bundle-launcher.cjs), which spares the CLI and every AM a second Node start.
case $prog in
  *.cjs) ;;
  *)
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
    ;;
esac
# fuxi trusts only the cluster CA it is given: Node builds no default trust store for it (as the
# #! line of client/dist/fuxi.cjs; docs/architecture.md, "The CLI skips Node's default trust store").
if [ "$name" = fuxi ]; then
  # shellcheck disable=SC2086 # FUXI_NODE_ARGS is a list of options
  exec env -u NODE_EXTRA_CA_CERTS -u SSL_CERT_DIR SSL_CERT_FILE=/dev/null "$node" --use-openssl-ca $FUXI_NODE_ARGS "$root/$prog" "$@"
fi
# shellcheck disable=SC2086 # FUXI_NODE_ARGS is a list of options
exec "$node" $FUXI_NODE_ARGS "$root/$prog" "$@"

#!/bin/sh
# Installs Fuxi-TS from an unpacked release tarball (make dist) on this host; run it as root from
# the tarball's directory: `tar xzf fuxi-VERSION-linux.tar.gz && sudo ./fuxi-VERSION/install.sh`.
# Running it again (the same release, or a newer one) is safe: it never overwrites a config.
#
#   - the system user and group `fuxi` (no login, home /var/lib/fuxi), which the daemons run as
#   - /var/lib/fuxi (state: the units' StateDirectory= puts master/ and agent/ under it), /etc/fuxi,
#     /etc/fuxi/pki (0750, group fuxi: the host's certificate and key go there, README "Security")
#   - the release in /opt/fuxi (replaced as a whole); /usr/local/bin/fuxi* link to its bin/
#   - /etc/fuxi/master.yaml and agent.yaml from deploy/config/cluster/ when they do not exist yet
#   - the units fuxi-master.service and fuxi-agent.service in /etc/systemd/system
#
# It needs the host's Node.js 20.19 or newer (checked first); the units find `node` on systemd's
# PATH (/usr/local/bin, /usr/bin, ...), or set FUXI_NODE in a drop-in.
#
# --root DIR installs into DIR as if it were / (for images and tests): no user is created, nothing
# is chowned and systemd is not reloaded.
set -eu
src=$(dirname "$(readlink -f "$0")")
root=
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$(readlink -f "$2"); shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (known: --root DIR)" >&2; exit 2 ;;
  esac
done
prefix=$root/opt/fuxi

"$src/bin/fuxi" --version >/dev/null # the node check of lib/fuxi-run, before anything changes

if [ -z "$root" ]; then
  if [ "$(id -u)" != 0 ]; then echo "install.sh: run it as root (or with --root DIR)" >&2; exit 1; fi
  if ! getent group fuxi >/dev/null; then groupadd --system fuxi; fi
  if ! getent passwd fuxi >/dev/null; then
    nologin=$(command -v nologin || echo /usr/sbin/nologin)
    useradd --system --gid fuxi --home-dir /var/lib/fuxi --no-create-home --shell "$nologin" --comment "Fuxi-TS daemons" fuxi
  fi
fi
install -d -m 0755 "$root/etc/fuxi" "$root/opt" "$root/usr/local/bin" "$root/etc/systemd/system"
install -d -m 0750 "$root/var/lib/fuxi" "$root/etc/fuxi/pki"
if [ -z "$root" ]; then chown fuxi:fuxi /var/lib/fuxi; chown root:fuxi /etc/fuxi/pki; fi

# The release, replaced as a whole (a half-copied tree is never the installed one).
if [ "$src" != "$prefix" ]; then
  rm -rf "$prefix.new" "$prefix.old"
  cp -a "$src" "$prefix.new"
  if [ -e "$prefix" ]; then mv "$prefix" "$prefix.old"; fi
  mv "$prefix.new" "$prefix"
  rm -rf "$prefix.old"
fi
for f in "$prefix"/bin/*; do ln -sfn "/opt/fuxi/bin/$(basename "$f")" "$root/usr/local/bin/$(basename "$f")"; done

for c in master agent; do
  if [ ! -e "$root/etc/fuxi/$c.yaml" ]; then install -m 0644 "$prefix/deploy/config/cluster/$c.yaml" "$root/etc/fuxi/$c.yaml"; fi
done
install -m 0644 "$prefix/deploy/systemd/fuxi-master.service" "$prefix/deploy/systemd/fuxi-agent.service" "$root/etc/systemd/system/"
if [ -z "$root" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

echo "Fuxi-TS $(cat "$prefix/VERSION") installed in $prefix. Next: the CA and this host's certificate"
echo "in /etc/fuxi/pki (fuxi certs; README, Security), edit /etc/fuxi/master.yaml (master hosts)"
echo "or /etc/fuxi/agent.yaml (agent hosts), then: systemctl enable --now fuxi-master (or fuxi-agent)."

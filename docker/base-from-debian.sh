#!/bin/sh
# Builds a base image for docker/Dockerfile from Debian packages alone, for hosts that reach a
# Debian mirror but not Docker Hub (where python:3.11-slim lives):
#
#   sudo docker/base-from-debian.sh                      # -> keymem-base:bookworm
#   docker build --build-arg BASE=keymem-base:bookworm -f docker/Dockerfile -t keymem .
#
# The image is Debian bookworm (debootstrap --variant=minbase) with python3 3.11, and a virtual
# environment at /usr/local, so `python3` and `pip` on PATH are the venv's: Debian marks its
# system Python externally managed (PEP 668), and the Dockerfile's `pip install .` would be
# refused there. Needs root (debootstrap, chroot), debootstrap and a docker client.
#
# Arguments: [TAG]. Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# DEBIAN_SUITE (default bookworm), EXTRA_CA_CERTS (space-separated PEM files added to the image's
# trust store: behind a TLS-intercepting proxy, pip in the Dockerfile trusts only what is here).
set -eu

tag=${1:-keymem-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${DEBIAN_SUITE:-bookworm}

for tool in debootstrap chroot docker tar; do
    command -v "$tool" >/dev/null || { echo "base-from-debian: $tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "base-from-debian: debootstrap needs root" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM

debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$suite" "$root" "$mirror"
echo "deb $mirror $suite main" > "$root/etc/apt/sources.list"
n=0
for cert in ${EXTRA_CA_CERTS:-}; do
    n=$((n + 1))
    cp "$cert" "$root/usr/local/share/ca-certificates/extra-$n.crt"
done
[ "$n" = 0 ] || chroot "$root" update-ca-certificates
chroot "$root" /usr/bin/python3 -m venv /usr/local
chroot "$root" /usr/local/bin/python3 -m pip --version

# Package caches: `apt-get update` brings the lists back when a derived image needs them.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* \
    "$root"/tmp/*

tar --numeric-owner --xattrs -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8' \
    -c 'CMD ["python3"]' \
    -m "debootstrap --variant=minbase $suite + python3 -m venv /usr/local" \
    - "$tag"
docker run --rm "$tag" python3 -c 'import sys, ssl; print(sys.version.split()[0], ssl.OPENSSL_VERSION)'

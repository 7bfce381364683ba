#!/bin/bash
# fetch-kernel.sh <id> [cache-root]
#   id: 5.10 | 6.1 | 6.12 | 7.3
# Downloads (never installs) a Debian distribution kernel via a PRIVATE apt
# configuration and extracts it with dpkg -x into <cache-root>/<id>/root.
# Writes <cache-root>/<id>/kernel.env (KVER, VMLINUZ, MODDIR, PKGS).
# Mirror URIs come from /etc/apt/sources.list.d/debian.sources at run time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/apt-env.sh"

id=${1:?usage: fetch-kernel.sh <5.10|6.1|6.12|7.3> [cache-root]}
cache_root=${2:-${TRACER_VM_CACHE:-$HOME/.cache/tracer-vm}}
case $id in
  5.10) suites="security:bullseye-security"; meta=linux-image-amd64 ;;
  6.1)  suites="security:bookworm-security"; meta=linux-image-amd64 ;;
  6.12) suites="security:bookworm-security"; meta=linux-image-6.12-amd64 ;;
  7.3)  suites="debian:trixie-backports";    meta=linux-image-amd64 ;;
  *) echo "unknown kernel id $id" >&2; exit 2 ;;
esac

out=$cache_root/$id
if [[ -f $out/kernel.env && -z ${FORCE:-} ]]; then
  echo "cached: $out/kernel.env"; cat "$out/kernel.env"; exit 0
fi
aptdir=$out/apt
rm -rf "$aptdir"; mkdir -p "$out"
# shellcheck disable=SC2086
apt_setup "$aptdir" $suites
# Signature check with $KEYRING (default: host debian-archive-keyring.gpg).
# If the archive is signed by a key the host keyring lacks, fetch a newer
# debian-archive-keyring .deb from "stable" (whose InRelease is also signed by
# the previous release's key, so the host keyring can verify it), dpkg -x it,
# and retry with that keyring. Verification is never disabled.
papt "$aptdir" apt-get -q update 2>&1 | tee "$out/update.log" || true
if grep -qE 'NO_PUBKEY|not signed|EXPKEYSIG|is not signed|InRelease.*(error|invalid)|^E:' "$out/update.log"; then
  echo "signature verification failed with $KEYRING; fetching newer debian-archive-keyring" >&2
  kdir=$out/keyring-apt
  rm -rf "$kdir"
  KEYRING=${HOST_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg} apt_setup "$kdir" "debian:${KEYRING_SUITE:-stable}"
  papt "$kdir" apt-get -q update
  (cd "$kdir" && papt "$kdir" apt-get -q download debian-archive-keyring)
  rm -rf "$out/keyring"; dpkg -x "$kdir"/debian-archive-keyring_*.deb "$out/keyring"
  KEYRING=$out/keyring/usr/share/keyrings/debian-archive-keyring.gpg
  rm -rf "$aptdir"
  # shellcheck disable=SC2086
  apt_setup "$aptdir" $suites
  papt "$aptdir" apt-get -q update 2>&1 | tee "$out/update.log"
  ! grep -qE 'NO_PUBKEY|not signed|EXPKEYSIG|^E:' "$out/update.log" || { echo "still cannot verify" >&2; exit 1; }
fi

# Field of "apt-cache show pkg=ver" (first stanza).
field() { papt "$aptdir" apt-cache show "$1" | awk -v f="$2:" '$1==f{ $1=""; sub(/^ /,""); print; exit } /^$/{exit}'; }

# Resolve: follow only exact-version "(= v)" dependencies from the meta package.
# That picks linux-image-X / linux-binary-X / linux-modules-X / linux-base-X and
# skips initramfs-tools, kmod, the perl "linux-base" etc.
metaver=$(field "$meta" Version)
[[ -n $metaver ]] || { echo "meta $meta not found" >&2; exit 1; }
declare -A seen=()
queue=("$meta=$metaver"); pkgs=()
while ((${#queue[@]})); do
  pv=${queue[0]}; queue=("${queue[@]:1}")
  [[ -n ${seen[$pv]:-} ]] && continue; seen[$pv]=1; pkgs+=("$pv")
  deps=$(field "$pv" Depends)
  while read -r dep; do
    [[ $dep =~ ^([^[:space:]]+)[[:space:]]*\(=[[:space:]]*([^\)]+)\) ]] || continue
    queue+=("${BASH_REMATCH[1]}=${BASH_REMATCH[2]}")
  done < <(tr ',' '\n' <<<"$deps" | sed 's/|.*//; s/^ *//')
done
echo "resolved: ${pkgs[*]}"
# The archive may move a suite to a newer kernel (trixie-backports past 7.3): still a Debian
# kernel with kprobes, so test it and say so rather than fail the run.
[[ $metaver == "$id".* ]] || echo "note: kernel $id now resolves to $metaver (the archive moved on); testing that" >&2

mkdir -p "$out/debs"
(cd "$out/debs" && papt "$aptdir" apt-get -q download "${pkgs[@]}")
rm -rf "$out/root"; mkdir -p "$out/root"
for pv in "${pkgs[@]}"; do
  p=${pv%%=*}; v=${pv#*=}
  deb=$(ls "$out/debs/${p}_"*"_amd64.deb" | grep -F "_$(sed 's/:/%3a/' <<<"$v")_" | head -1)
  dpkg -x "$deb" "$out/root"
done
deb_bytes=$(du -cb "$out"/debs/*.deb | tail -1 | cut -f1)
# Keep cache lean: the .debs are re-downloadable; keep them only if asked.
[[ -n ${KEEP_DEBS:-} ]] || rm -rf "$out/debs"

# Layout: <=6.x: /boot/vmlinuz-K + /lib/modules/K ; 7.x (linux-binary/-modules
# split, merged-/usr): /usr/lib/modules/K/{vmlinuz,config,System.map}
first() { local f; for f in "$@"; do [[ -e $f ]] && { echo "$f"; return 0; }; done; return 0; }
moddir=$(first "$out"/root/lib/modules/*/ "$out"/root/usr/lib/modules/*/)
moddir=${moddir%/}; kver=${moddir##*/}
[[ -n $kver ]] || { echo "no modules dir" >&2; exit 1; }
vmlinuz=$(first "$out/root/boot/vmlinuz-$kver" "$moddir/vmlinuz")
config=$(first "$out/root/boot/config-$kver" "$moddir/config")
# Debian ships no modules.dep (postinst runs depmod). busybox depmod -b BASE
# reads BASE/lib/modules/K, understands .ko.xz; takes ~17 s for 4000 .ko.xz.
if [[ ! -e $out/root/lib/modules ]]; then mkdir -p "$out/root/lib"; ln -s ../usr/lib/modules "$out/root/lib/modules"; fi
busybox depmod -b "$out/root" "$kver"
[[ -f $moddir/modules.dep ]] || { echo "depmod failed for $kver" >&2; exit 1; }
cat > "$out/kernel.env" <<EOF
ID=$id
KVER=$kver
VMLINUZ=$vmlinuz
MODDIR=$moddir
CONFIG=$config
PKGS="${pkgs[*]}"
DEB_BYTES=$deb_bytes
EOF
cat "$out/kernel.env"

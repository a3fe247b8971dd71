#!/bin/sh
# Rebuilds the committed NoCloud seed-image fixtures in this directory from
# the seed files under seed/ and proxmox/. Needs genisoimage, cloud-localds
# (cloud-image-utils), mkfs.vfat (dosfstools) and mcopy (mtools); no root.
#
#   cloud-localds.iso.gz   cloud-localds -N: ISO9660 + Rock Ridge + Joliet
#   plain.iso.gz           genisoimage without -R/-J: 8.3 names (META_DAT.;1)
#   proxmox.iso.gz         Proxmox VE's flags: -iso-level 3 -J -R -V cidata
#   cloud-localds.vfat.gz  cloud-localds -f vfat: FAT12
#   fat16.img.gz           mkfs.vfat -F 16 + mcopy
#   fat32.img.gz           mkfs.vfat -F 32 -s 1 + mcopy: the smallest real
#                          FAT32 (65525 clusters, 33 MB; 34 KB compressed)
#   fuzz-*.img.gz          the smallest images the tools make: fuzz seeds
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

s=seed
cloud-localds -N $s/network-config "$tmp/cloud-localds.iso" $s/user-data $s/meta-data
cloud-localds -f vfat "$tmp/cloud-localds.vfat" $s/user-data $s/meta-data
genisoimage -quiet -V cidata -o "$tmp/plain.iso" $s
genisoimage -quiet -iso-level 3 -J -R -V cidata -o "$tmp/proxmox.iso" proxmox

mkfs.vfat -F 16 -s 1 -n cidata -C "$tmp/fat16.img" 2200 >/dev/null 2>&1
mkfs.vfat -F 32 -s 1 -n CIDATA -C "$tmp/fat32.img" 33800 >/dev/null 2>&1
for img in fat16 fat32; do
	mcopy -i "$tmp/$img.img" $s/meta-data $s/user-data $s/vendor-data $s/network-config ::
done
for f in cloud-localds.iso plain.iso proxmox.iso cloud-localds.vfat fat16.img fat32.img; do
	gzip -9n <"$tmp/$f" >"$f.gz"
done

# Fuzz seeds: as small as the tools allow.
genisoimage -quiet -no-pad -J -R -V cidata -o "$tmp/fuzz-iso.img" $s
mkfs.vfat -n cidata -C "$tmp/fuzz-fat.img" 64 >/dev/null 2>&1
mcopy -i "$tmp/fuzz-fat.img" $s/meta-data $s/user-data ::
for f in fuzz-iso.img fuzz-fat.img; do
	gzip -9n <"$tmp/$f" >"$f.gz"
done

#!/bin/sh
# mmdebstrap --customize-hook of a release's base image for the
# systemd-booted test guest. Run on the host as:
#   customize.sh ROOT KERNEL_TREE KERNEL_RELEASE
# It copies the pinned kernel's modules in (pruned to what a QEMU guest
# uses), builds the image's own initramfs with mkinitramfs, and leaves the
# image as a golden image is left: empty machine-id, no SSH host keys, no
# cloud-init state. apt's package lists stay: each stack's image installs
# its packages on a copy of this base (layer.sh), from the same lists.
# Everything here is an input of the cached tars' hashes.
set -eu
root=$1 ktree=$2 kver=$3

mkdir -p "$root/lib/modules" "$root/boot"
cp -a "$ktree/lib/modules/$kver" "$root/lib/modules/"
m="$root/lib/modules/$kver/kernel"
rm -rf "$m/sound" "$m/drivers/gpu" "$m/drivers/media" "$m/drivers/infiniband" \
	"$m/drivers/net/wireless" "$m/drivers/staging" "$m/drivers/bluetooth" \
	"$m/drivers/iio" "$m/drivers/usb" "$m/drivers/hid" "$m/drivers/isdn" \
	"$m/drivers/input" "$m/drivers/mtd" "$m/drivers/net/ethernet" "$m/net/bluetooth" \
	"$m/net/wireless" "$m/net/mac80211" "$m/drivers/scsi/qla2xxx" "$m/drivers/scsi/lpfc" \
	"$m/drivers/md" "$m/drivers/nvme" "$m/fs/btrfs" "$m/fs/xfs" "$m/fs/ocfs2" "$m/fs/gfs2" \
	"$m/fs/nfs" "$m/fs/nfsd" "$m/fs/ceph" "$m/fs/smb" "$m/fs/cifs" "$m/drivers/target"
cp "$ktree/boot/config-$kver" "$ktree/boot/System.map-$kver" "$root/boot/"
chroot "$root" depmod -a "$kver"
# Only what boots a QEMU guest: virtio disks and NICs, ext4, and the IDE
# CD-ROM with ISO9660 (loaded early, as Debian's default MODULES=most does,
# so that the seed's drive is there when seedkeeper-boot looks).
cat >"$root/etc/initramfs-tools/conf.d/seedkeeper-test" <<'X'
MODULES=list
COMPRESS=gzip
X
printf '%s\n' virtio_pci virtio_blk virtio_net ext4 ata_piix sr_mod isofs >"$root/etc/initramfs-tools/modules"
chroot "$root" mkinitramfs -o "/boot/initrd.img-$kver" "$kver"

echo 'LABEL=skroot / ext4 defaults,errors=remount-ro 0 1' >"$root/etc/fstab"
echo skguest >"$root/etc/hostname"
rm -f "$root/etc/resolv.conf"
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id" "$root"/etc/ssh/ssh_host_*
rm -rf "$root/var/lib/cloud"
# No login prompts on the console; no periodic jobs mid-test.
chroot "$root" systemctl mask serial-getty@ttyS0.service getty@tty1.service \
	apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer 2>/dev/null || true
rm -rf "$root/var/cache/apt/archives"/*.deb \
	"$root/usr/share/doc"/* "$root/usr/share/man"/* "$root/usr/share/locale"/*

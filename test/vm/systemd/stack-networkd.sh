# systemd-networkd, as Debian images built for it (and netplan's) run it.
# Sourced by layer.sh with $root set.
chroot "$root" systemctl enable systemd-networkd.service

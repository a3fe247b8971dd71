# NetworkManager from Debian's network-manager, as RHEL-family images run
# it: it manages every ethernet device, with keyfiles. Sourced by
# layer.sh with $root set.
chroot "$root" systemctl enable NetworkManager.service
chroot "$root" systemctl disable systemd-networkd.service 2>/dev/null || true

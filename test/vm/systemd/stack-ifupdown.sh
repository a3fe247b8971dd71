# ifupdown, as Debian's installer and many Debian images leave it: an
# interfaces file that sources interfaces.d, networking.service enabled,
# isc-dhcp-client for "inet dhcp". Sourced by layer.sh with $root set.
cat >"$root/etc/network/interfaces" <<'X'
# interfaces(5) file used by ifup(8) and ifdown(8)
source /etc/network/interfaces.d/*

auto lo
iface lo inet loopback
X
mkdir -p "$root/etc/network/interfaces.d"
chroot "$root" systemctl enable networking.service

# netplan.io as the image's network configuration layer, rendered by
# NetworkManager: the catch-all of stack-netplan.sh (DHCP on every en* and
# eth* NIC) with renderer NetworkManager, so netplan's generator writes
# netplan-all-en and netplan-all-eth profiles into
# /run/NetworkManager/system-connections at every boot. Sourced by
# layer.sh with $root set.
mkdir -p "$root/etc/netplan"
cat >"$root/etc/netplan/90-default.yaml" <<'Y'
network:
    version: 2
    renderer: NetworkManager
    ethernets:
        all-en:
            match:
                name: en*
            dhcp4: true
            dhcp6: true
        all-eth:
            match:
                name: eth*
            dhcp4: true
            dhcp6: true
Y
chmod 600 "$root/etc/netplan/90-default.yaml"
chroot "$root" systemctl enable NetworkManager.service
chroot "$root" systemctl disable systemd-networkd.service 2>/dev/null || true

# netplan.io as the image's network configuration layer, rendered by
# systemd-networkd, as Debian's and Ubuntu's image builders leave it: one
# catch-all that does DHCP on every en* and eth* NIC. Sourced by
# layer.sh with $root set.
mkdir -p "$root/etc/netplan"
cat >"$root/etc/netplan/90-default.yaml" <<'X'
network:
    version: 2
    renderer: networkd
    ethernets:
        all-en:
            match:
                name: en*
            dhcp4: true
            dhcp4-overrides:
                use-domains: true
            dhcp6: true
            dhcp6-overrides:
                use-domains: true
        all-eth:
            match:
                name: eth*
            dhcp4: true
            dhcp4-overrides:
                use-domains: true
            dhcp6: true
            dhcp6-overrides:
                use-domains: true
X
chmod 600 "$root/etc/netplan/90-default.yaml"
chroot "$root" systemctl enable systemd-networkd.service

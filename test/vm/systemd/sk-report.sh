#!/bin/sh
# The test guest's report: what the host-side tests assert, written as a
# tar onto the second virtio disk (/dev/vdb, a zeroed raw file on the
# host), then the machine powers off. Run by sk-report.service after
# cloud-final, or by sk-report-late.timer (argument "late") when the boot
# hangs. Kernel command line knobs:
#   sk.hotplug=MAC   wait for a NIC with this MAC to be hot-added and to
#                    get an address; snapshot its addresses, again 30 s later
#   sk.hold=SECONDS  stay up that long before reporting
#   sk.settle=UNIT   snapshot the network (addresses, routes, links,
#                    NetworkManager's devices and connections) into early/
#                    at once, then wait until 30 s after UNIT (the image's
#                    network manager) became active before the report's own
#                    snapshot; "settle" holds UNIT's and the snapshot's
#                    monotonic times in microseconds
#   sk.plan=1        plan the seed CD's network-config again
#                    ("seedkeeper net plan"): what a second apply would do
#   sk.run=seal      seal the machine as an image builder does last:
#                    "seedkeeper image check" first (its output and exit
#                    status reported), the report gathered as the machine
#                    was, then "seedkeeper image seal" (output, exit status
#                    and what it left reported too), then the power-off
#   sk.run=handkey   append a key line by hand to every user's
#                    authorized_keys after the report is gathered
#   sk.nmtry=ID      after the journal is gathered, ask NetworkManager to
#                    activate its profile ID on every ethernet device
#                    (nm-try: device, exit status, nmcli's words)
#   sk.run=remove    remove the package after the report is gathered
#                    (dpkg -r; its output, exit status and the files left
#                    for cloud-init reported)
set +e
PATH=/usr/sbin:/usr/bin:/sbin:/bin
out=/run/sk-report
lock=/run/sk-report.lock
mkdir "$lock" 2>/dev/null || exit 0 # one report per boot
rm -rf "$out"
mkdir -p "$out"
echo "SKVM up ${1:-normal}" >/dev/ttyS0
echo "${1:-normal}" >"$out/kind"

arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n 1; }

mac=$(arg sk.hotplug)
if [ -n "$mac" ] && [ "$1" != late ]; then
	i=0
	while [ $i -lt 240 ]; do
		dev=$(ip -o link | awk -v m="$mac" '$0 ~ m {sub(":$","",$2); print $2; exit}')
		if [ -n "$dev" ] && ip -4 -o addr show dev "$dev" | grep -q inet; then
			break
		fi
		[ $i = 0 ] && echo "SKVM waiting-hotplug" >/dev/ttyS0
		sleep 1
		i=$((i + 1))
	done
	ip -j addr >"$out/addr-hotplug.json"
	echo "${dev:-}" >"$out/hotplug-dev"
	sleep 30
	ip -j addr >"$out/addr-hotplug-30s.json"
fi
# The network as the image's manager leaves it: addresses, routes, link
# kinds and their parameters (bond mode, VLAN id and parent, bridge
# settings, the master of every port), NetworkManager's device states and
# the connections it made or loaded.
netsnap() {
	ip -j addr >"$1/addr.json"
	ip -j route show table main >"$1/route4.json"
	ip -d -j link >"$1/link-detail.json"
	nmcli -t -f DEVICE,STATE device 2>/dev/null >"$1/nm-device-states"
	nmcli -t -f NAME,TYPE,DEVICE,FILENAME connection show 2>/dev/null >"$1/nm-connections"
}
settle=$(arg sk.settle)
if [ -n "$settle" ] && [ "$1" != late ]; then
	mkdir -p "$out/early"
	netsnap "$out/early"
	active=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$settle.service")
	now=0
	i=0
	while [ $i -lt 120 ]; do
		now=$(awk '{printf "%d", $1 * 1000000}' /proc/uptime)
		[ "${active:-0}" -gt 0 ] && [ "$now" -ge $((active + 30000000)) ] && break
		sleep 1
		i=$((i + 1))
	done
	echo "$settle ${active:-0} $now" >"$out/settle"
fi
hold=$(arg sk.hold)
[ -n "$hold" ] && sleep "$hold"
run=$(arg sk.run)
[ "$1" = late ] && run=
if [ "$run" = seal ]; then
	seedkeeper image check >"$out/image-check" 2>&1
	echo $? >"$out/image-check.rc"
fi

cat /var/lib/cloud/data/instance-id >"$out/instance-id" 2>/dev/null
cat /var/lib/cloud/data/previous-instance-id >"$out/previous-instance-id" 2>/dev/null
for k in /etc/ssh/ssh_host_*_key.pub; do
	[ -e "$k" ] && ssh-keygen -lf "$k"
done >"$out/ssh-host-keys" 2>&1
netsnap "$out"
ip -j -6 route show table main >"$out/route6.json"
ip -j link >"$out/link.json"
cp /var/lib/seedkeeper/status.json "$out/status.json" 2>/dev/null
cp /var/lib/seedkeeper/network-receipt.json "$out/network-receipt.json" 2>/dev/null
if [ "$(arg sk.plan)" = 1 ]; then
	mkdir -p /run/sk-cd
	mount -r /dev/sr0 /run/sk-cd 2>"$out/net-plan.err"
	# The plan on stdout; the log and the allowlist in force on stderr.
	seedkeeper net plan --config /run/sk-cd/network-config >"$out/net-plan" 2>>"$out/net-plan.err"
	echo $? >"$out/net-plan.rc"
	umount /run/sk-cd
fi
nmcli -t device 2>/dev/null >"$out/nm-devices"
# Which .network file networkd gave each link, and the wait-online unit
# with its drop-ins (netplan writes one at generator time).
networkctl status --all --no-pager >"$out/networkctl" 2>&1
systemctl cat systemd-networkd-wait-online.service >"$out/wait-online-unit" 2>&1
cat /run/network/ifstate 2>/dev/null >"$out/ifstate"
cp /etc/resolv.conf "$out/resolv.conf" 2>/dev/null
readlink /etc/resolv.conf >"$out/resolv.conf.link" 2>/dev/null
# With systemd-resolved, /etc/resolv.conf names its stub; the servers it
# was given are in its uplink file.
cp /run/systemd/resolve/resolv.conf "$out/resolved-resolv.conf" 2>/dev/null
cat /proc/cmdline >"$out/cmdline"
# The machine's identity and what the user-data did with it.
cat /etc/machine-id >"$out/machine-id" 2>/dev/null
hostname >"$out/hostname"
cat /root/.ssh/authorized_keys /home/*/.ssh/authorized_keys >"$out/authorized-keys" 2>/dev/null
cat /var/lib/cloud/instance/datasource >"$out/datasource" 2>/dev/null
# What an admin's changes reached on a kept instance: the hostname file,
# the password hash of every user that has one, seedkeeper's record, and
# how cloud-init found its datasource (from cache, or read again).
cat /etc/hostname >"$out/etc-hostname" 2>/dev/null
awk -F: '$2 ~ /^\$/ {print $1 ":" $2}' /etc/shadow >"$out/shadow-hashes" 2>/dev/null
cp /var/lib/seedkeeper/changes.json "$out/changes.json" 2>/dev/null
grep -E 'restored from|no cache found|cache invalid|targeting instance id|Updating hostname|setting the system hostname|user maintained' \
	/var/log/cloud-init.log 2>/dev/null | tail -n 40 >"$out/cloud-init-cache"
ls -A /var/lib/seedkeeper >"$out/seedkeeper-state" 2>/dev/null
cat /sys/class/dmi/id/product_uuid >"$out/product_uuid" 2>/dev/null
# show UNITS PROPS: `systemctl show -p PROPS` of every unit at once (each
# systemctl costs a third of a second under TCG), each unit's properties
# after a line "[UNIT]", UNIT as named here.
show() {
	systemctl show $1 -p "$2" 2>&1 | awk -v units="$1" '
		BEGIN { split(units, u, " "); i = 0; start = 1 }
		/^$/ { start = 1; next }
		start { print "[" u[++i] "]"; start = 0 }
		{ print }'
}
# cloud-init-main and cloud-init-network are cloud-init 24.3+'s (Debian 13);
# cloud-init is 22.4's (Debian 12).
show "seedkeeper-boot seedkeeper-watch cloud-init-main cloud-init-local cloud-init cloud-init-network \
cloud-config cloud-final systemd-networkd systemd-networkd-wait-online NetworkManager networking \
systemd-udev-trigger local-fs.target sysinit.target network-pre.target ssh" \
	LoadState,ActiveState,SubState,Result,ExecMainStatus,UnitFileState,InactiveExitTimestampMonotonic,ExecMainStartTimestampMonotonic,ExecMainExitTimestampMonotonic,ActiveEnterTimestampMonotonic,CPUUsageNSec,NRestarts,DropInPaths,CPUWeight,FragmentPath,After \
	>"$out/units"
# Every cloud-init service the image has, with its drop-ins: the no-source
# drop-in must be on each one a boot runs.
cu=$(systemctl list-unit-files --type=service --no-legend --plain 'cloud-*' 2>/dev/null | awk '{print $1}')
[ -n "$cu" ] && show "$(echo $cu)" DropInPaths |
	awk '/^\[/ { u = substr($0, 2, length($0) - 2) } /^DropInPaths=/ { print u " " substr($0, 13) }' >"$out/cloud-units"
# The unit graph as systemd sees it: errors in seedkeeper's units and the
# ones it is ordered against (only those loaded on this image).
vu=$(show "seedkeeper-boot.service seedkeeper-watch.service cloud-init-main.service cloud-init-local.service \
cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service" LoadState |
	awk '/^\[/ { u = substr($0, 2, length($0) - 2) } /^LoadState=loaded$/ { printf " %s", u }')
# (--man=no: the image has no man command to check Documentation= with.)
systemd-analyze verify --man=no $vu >"$out/verify" 2>&1
echo $? >"$out/verify.rc"
systemctl list-units --failed --plain --no-legend >"$out/failed" 2>&1
journalctl -b -o short-monotonic --no-pager >"$out/journal" 2>&1
journalctl -b -o cat --no-pager -u seedkeeper-boot -u seedkeeper-watch >"$out/journal-seedkeeper" 2>&1
nmtry=$(arg sk.nmtry)
if [ -n "$nmtry" ] && [ "$1" != late ]; then
	nmcli -g DEVICE,TYPE device 2>/dev/null | awk -F: '$2 == "ethernet" {print $1}' | while read -r dev; do
		o=$(nmcli -w 30 connection up id "$nmtry" ifname "$dev" 2>&1)
		echo "$dev $? $(echo "$o" | tr '\n' ' ')"
	done >"$out/nm-try"
fi
seedkeeper status >"$out/seedkeeper-status" 2>&1
# Every file the boot flow may write, with its inode and mtime: a rewrite
# (atomic rename) changes the inode.
find /var/lib/seedkeeper /var/lib/cloud/seed /etc/resolv.conf /etc/systemd/network \
	/run/systemd/network /etc/NetworkManager/system-connections /run/NetworkManager/system-connections \
	/etc/network/interfaces.d /run/network/interfaces.d -xdev -type f \
	-printf '%p %i %T@ %s\n' 2>/dev/null | sort >"$out/files"
find /run/systemd/network /run/NetworkManager/system-connections /run/NetworkManager/conf.d \
	/run/network/interfaces.d /etc/systemd/network /etc/network/interfaces /etc/network/interfaces.d \
	-type f 2>/dev/null | while read -r f; do
	echo "== $f"
	cat "$f"
done >"$out/netfiles" 2>&1
# systemd 252 (Debian 12) refuses blame before the boot is over, and this
# report is part of the boot: it said only that, after 3-4 s under TCG.
sdv=$(systemctl --version | awk 'NR == 1 { print $2 }')
if [ "${sdv:-0}" -ge 253 ] 2>/dev/null; then
	systemd-analyze blame >"$out/blame" 2>&1
else
	echo "not run: systemd $sdv refuses blame before the boot is over" >"$out/blame"
fi
# The critical chain of cloud-init's first units, as systemd-analyze
# critical-chain computes it (which it refuses before the boot is over,
# and this report is part of the boot): each unit's start, and when every
# unit it is ordered after became active.
for u in cloud-init-main cloud-init-local; do
	[ "$(systemctl show "$u.service" -p LoadState --value)" = loaded ] || continue
	echo "== $u.service $(systemctl show "$u.service" -p InactiveExitTimestampMonotonic --value)"
	for a in $(systemctl show "$u.service" -p After --value); do
		echo "$a $(systemctl show -p ActiveEnterTimestampMonotonic --value -- "$a")"
	done
done >"$out/critical-chain" 2>&1
# When sshd listened: the first journal line of sshd's "Server listening".
journalctl -b -o short-monotonic --no-pager -u ssh.service 2>/dev/null | grep -m 1 'Server listening' |
	sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p' >"$out/sshd-listening"
# What seedkeeper costs on an idle machine (BENCHMARKS.md, boot cost):
# the bare exec, and detect + read of the metadata, in milliseconds.
ms() { t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
{
	echo "version $(ms seedkeeper --version)"
	echo "fetch $(ms seedkeeper fetch)"
	echo "version-again $(ms seedkeeper --version)"
} >"$out/idle-cost"
if [ "$run" = seal ]; then
	seedkeeper image seal >"$out/image-seal" 2>&1
	echo $? >"$out/image-seal.rc"
	cat /etc/machine-id >"$out/machine-id-sealed" 2>/dev/null
	ls -A /var/lib/seedkeeper >"$out/seedkeeper-state-sealed" 2>/dev/null
	ls -A /etc/ssh >"$out/ssh-sealed" 2>/dev/null
	ls -A /var/lib/cloud >"$out/cloud-sealed" 2>/dev/null
fi
# sk.run=remove: remove the package last, as an admin would, and report
# what is left for cloud-init.
if [ "$run" = remove ]; then
	dpkg -r seedkeeper >"$out/remove" 2>&1
	echo $? >"$out/remove.rc"
	find /var/lib/cloud/seed /var/lib/cloud/scripts /etc/cloud/cloud.cfg.d /run/systemd/network \
		/etc/network/interfaces.d -type f 2>/dev/null | sort >"$out/after-remove"
fi
# sk.run=handkey: a person adds a key by hand to every user's
# authorized_keys after the report is gathered, for the next boot to keep.
if [ "$run" = handkey ]; then
	for f in /home/*/.ssh/authorized_keys; do
		[ -f "$f" ] && echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHandAddedKeyOfAPerson person@hand" >>"$f"
	done
fi
# The DMI cloud-init's ds-identify reads, and what it made of it.
for f in sys_vendor product_name product_serial; do
	echo "$f=$(cat /sys/class/dmi/id/$f 2>/dev/null)"
done >"$out/dmi"
cp /run/cloud-init/ds-identify.log "$out/ds-identify.log" 2>/dev/null
# The VMware image variant (test/vm/systemd/vmware-rpctool): every call its
# vmware-rpctool was given, and cloud-init's merged configuration; what the
# stand-in for VMware Tools (systemd/vmware-tools) did and left, and the
# marker of the customization seedkeeper applied.
if [ -d /usr/lib/sk-vmware ]; then
	cp /run/sk-vmware/calls "$out/vmware-calls" 2>/dev/null
	ls -A /run/sk-vmware >"$out/vmware-run" 2>/dev/null
	ls -A /run/vmware-imc >"$out/vmware-imc-dir" 2>/dev/null
	cat /var/log/vmware-imc/toolsDeployPkg.log >"$out/vmware-tools.log" 2>/dev/null
	cat /var/lib/seedkeeper/vmware-imc-marker >"$out/vmware-imc-marker" 2>/dev/null
	systemctl show open-vm-tools.service -p ExecMainStartTimestampMonotonic,ConditionResult,Result >"$out/vmware-tools-unit" 2>&1
	cloud-init query merged_cfg >"$out/cloud-init-merged-cfg.json" 2>"$out/cloud-init-merged-cfg.err"
	# Whether cloud-init configured a NIC itself: its version, what its
	# log says of network configuration, and the files its renderers
	# write.
	cloud-init --version >"$out/cloud-init-version" 2>&1
	grep -E 'network config|etwork configuration|Generated networking|hotplug|ds-identify|datasource' /var/log/cloud-init.log 2>/dev/null |
		tail -n 60 >"$out/cloud-init-network"
	ls -A /etc/netplan >"$out/netplan-files" 2>/dev/null
fi
date +%s >"$out/time"
tar -C "$out" -cf /dev/vdb . && sync
echo "SKVM reported" >/dev/ttyS0
systemctl --no-block poweroff

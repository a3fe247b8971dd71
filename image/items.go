package image

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/identity"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/unit"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/seed"
)

// The check items, in the order of Checks.

// Units.

// Units are seedkeeper's units, which must start at boot.
var Units = []string{"seedkeeper-boot.service", "seedkeeper-watch.service"}

// unit says what systemd makes of a unit in the image (internal/unit):
// the running system's /run counts, an image's does not.
func (in *inspection) unit(name string) unit.State {
	return unit.Lookup(unit.Root{Dir: in.root.Path("/"), Live: in.root.IsReal()}, name)
}

func checkUnits(in *inspection) Item {
	it := Item{Verdict: OK}
	var missing, masked, disabled, ok []string
	for _, u := range Units {
		st := in.unit(u)
		switch {
		case st.Err != nil:
			return Item{Verdict: Error, Found: st.Why, Clone: "not known: the image's unit directories could not be read"}
		case st.File == "":
			missing = append(missing, u)
		case st.Masked:
			masked = append(masked, u)
			it.Paths = append(it.Paths, st.File)
		case !st.Enabled:
			disabled = append(disabled, u)
			it.Paths = append(it.Paths, st.File)
		default:
			ok = append(ok, u)
			it.Paths = append(it.Paths, st.File)
		}
	}
	ciFile := in.unit("cloud-init-local.service").File
	var found, fixes []string
	if len(ok) > 0 {
		found = append(found, strings.Join(ok, " and ")+" installed and enabled")
	}
	if len(missing) > 0 {
		found = append(found, strings.Join(missing, " and ")+" not installed")
		fixes = append(fixes, "install the seedkeeper package in the image")
	}
	if len(masked) > 0 {
		found = append(found, strings.Join(masked, " and ")+" masked")
		fixes = append(fixes, in.systemctl("unmask "+strings.Join(masked, " ")))
	}
	if len(disabled) > 0 {
		found = append(found, strings.Join(disabled, " and ")+" installed but not enabled (no .wants link: an image built in a chroot where enabling failed)")
		fixes = append(fixes, in.systemctl("enable "+strings.Join(disabled, " ")))
	}
	if ciFile == "" {
		found = append(found, "cloud-init is not installed (no cloud-init-local.service)")
		fixes = append(fixes, "install cloud-init in the image")
	}
	it.Found = strings.Join(found, "; ")
	var clone []string
	switch {
	case len(missing)+len(masked) > 0 || slices.Contains(disabled, Units[0]):
		clone = append(clone, "seedkeeper does not run at boot: cloud-init finds no seed (or a stale one), the instance ID is not decided and owned NICs get no network")
	case len(disabled) > 0:
		clone = append(clone, "seedkeeper boot runs, but NICs added after boot get no network (the hotplug daemon does not run)")
	}
	if ciFile == "" {
		clone = append(clone, "nothing reads the seed seedkeeper writes: no users, SSH keys or user-data")
	}
	if len(clone) > 0 {
		it.Verdict = Finding
		it.Clone = strings.Join(clone, "; ")
	} else {
		it.Clone = "seedkeeper boot runs before cloud-init-local and the hotplug daemon after it"
	}
	it.Fix = strings.Join(fixes, "; ")
	return it
}

// The drop-in and what overrides it.

// reinstallFix is how to get the package's drop-in back: reinstall the
// package with its missing configuration files, from the file it was
// installed from (the README's flow: a local .deb or .rpm), or from a
// repository. apt-get install --reinstall alone fails after a local
// install: apt knows no source of the package. Under --root, each runs
// in the image (chroot).
func (in *inspection) reinstallFix() string {
	c := func(s string) string {
		if in.root.IsReal() {
			return s
		}
		return "chroot " + string(in.root) + " " + s
	}
	return "reinstall the package with its configuration files: " +
		c("dpkg -i --force-confmiss FILE.deb") + " with the seedkeeper .deb it was installed from (from an apt repository: " +
		c("apt-get install --reinstall -o Dpkg::Options::=--force-confmiss seedkeeper") + "); on rpm: " +
		c("rpm -U --replacepkgs FILE.rpm") + " (from a repository: " + c("dnf reinstall seedkeeper") + ")"
}

func checkDropIn(in *inspection) Item {
	it := Item{Verdict: OK, Paths: []string{DropIn}}
	if in.ccErr != nil {
		it.Verdict, it.Found = Error, in.ccErr.Error()
		return it
	}
	var found, clone, fixes []string
	finding := false
	if !in.exists(DropIn) {
		finding = true
		found = append(found, DropIn+" is missing")
		fixes = append(fixes, in.reinstallFix())
	}
	override := func(s setting) {
		if s.File != DropIn {
			it.Paths = append(it.Paths, s.File)
			fixes = append(fixes, fmt.Sprintf("remove %s from %s, or name that file so that it sorts before %s", s.Key, s.File, path.Base(DropIn)))
		}
	}

	ds := in.cc.lookup("datasource_list")
	switch {
	case !ds.Set():
		finding = true
		found = append(found, "no file sets datasource_list")
		clone = append(clone, "cloud-init's ds-identify probes every datasource and may pick another one than seedkeeper's seed")
	case !onlyNoCloud(ds.Value):
		finding = true
		found = append(found, fmt.Sprintf("datasource_list is set last by %s, not to [NoCloud, None]", ds.File))
		clone = append(clone, "cloud-init may use another datasource than seedkeeper's seed, with its own instance ID")
		override(ds)
	default:
		found = append(found, fmt.Sprintf("datasource_list [NoCloud, None] (from %s)", ds.File))
	}

	fsl := in.cc.lookup("datasource", "NoCloud", "fs_label")
	if fsl.Set() && fsl.Value != nil {
		finding = true
		found = append(found, fmt.Sprintf("datasource.NoCloud.fs_label is set last by %s, not to null", fsl.File))
		clone = append(clone, "cloud-init also mounts and reads a disk labelled cidata itself, besides the seed seedkeeper wrote")
		override(fsl)
	} else if !fsl.Set() {
		finding = true
		found = append(found, "no file turns off NoCloud's label search (datasource.NoCloud.fs_label: null)")
		clone = append(clone, "cloud-init also mounts and reads a disk labelled cidata itself, besides the seed seedkeeper wrote")
	}

	if sf := in.cc.lookup("datasource", "NoCloud", "seedfrom"); sf.Set() && sf.Value != seedSeedfrom {
		finding = true
		found = append(found, fmt.Sprintf("datasource.NoCloud.seedfrom is set last by %s, not to seedkeeper's seed", sf.File))
		clone = append(clone, "cloud-init reads its seed from that seedfrom, not from the seed seedkeeper wrote (an http(s) one over the network, in its network stage)")
		override(sf)
	}

	nc := in.cc.lookup("network", "config")
	disabled := nc.Value == "disabled"
	owner := in.cfg.Network.Owner
	switch {
	case owner == "seedkeeper" && !disabled:
		finding = true
		if nc.Set() {
			found = append(found, fmt.Sprintf("network.config is set last by %s, not to disabled", nc.File))
			override(nc)
		} else {
			found = append(found, "no file sets network.config: disabled")
		}
		clone = append(clone, "cloud-init configures the network too (its fallback DHCP on the first NIC, or a network-config), and fights seedkeeper over the NICs it owns")
	case owner == "cloud-init" && disabled:
		finding = true
		found = append(found, fmt.Sprintf("network.config: disabled (from %s) while network.owner is cloud-init", nc.File))
		clone = append(clone, "nothing configures the network: seedkeeper leaves it to cloud-init and cloud-init's network configuration is disabled")
		fixes = append(fixes, fmt.Sprintf("delete the network lines of %s (or set network.owner: seedkeeper in %s)", nc.File, config.DefaultPath))
		it.Paths = append(it.Paths, nc.File)
	case disabled:
		found = append(found, fmt.Sprintf("network.config: disabled (from %s)", nc.File))
	default:
		found = append(found, "cloud-init's network configuration is on (network.owner: cloud-init)")
	}
	if bad := in.cc.unparsable(); len(bad) > 0 {
		found = append(found, "cloud-init skips "+strings.Join(bad, "; "))
		if !finding {
			it.Verdict = Note
		}
	}
	if cm := in.cc.customMerge(); len(cm) > 0 {
		found = append(found, "merge rules of their own in "+strings.Join(cm, ", ")+": the files named here assume cloud-init's default merge")
		if !finding {
			it.Verdict = Note
		}
	}
	it.Found = strings.Join(found, "; ")
	if finding {
		it.Verdict = Finding
		it.Clone = strings.Join(clone, "; ")
		it.Fix = strings.Join(fixes, "; ")
	} else {
		it.Clone = "cloud-init reads only the seed seedkeeper writes, and leaves the network to " + owner
	}
	slices.Sort(it.Paths)
	it.Paths = slices.Compact(it.Paths)
	return it
}

// onlyNoCloud reports whether a datasource_list value leads cloud-init to
// NoCloud alone (with None as its fallback).
func onlyNoCloud(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 || l[0] != "NoCloud" {
		return false
	}
	for _, x := range l[1:] {
		if x != "None" {
			return false
		}
	}
	return true
}

// cloud-init's state.

// CloudDir is cloud-init's state directory; cloud-init clean removes all
// of it but seed/.
const CloudDir = paths.CloudDir

// cloudState lists what cloud-init left in CloudDir (but seed/), its
// instance ID and its logs.
func (in *inspection) cloudState() (entries []string, instanceID string, logs []string, err error) {
	ents, err := fsutil.ReadDirIn(string(in.root), CloudDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil, err
	}
	for _, e := range ents {
		if e.Name() != "seed" {
			entries = append(entries, path.Join(CloudDir, e.Name()))
		}
	}
	instanceID, err = identity.CloudInitID(in.root)
	if err != nil {
		return nil, "", nil, err
	}
	for _, l := range in.cc.logFiles() {
		if in.exists(l) {
			logs = append(logs, l)
		}
	}
	return entries, instanceID, logs, nil
}

// isInstanceState reports whether a CloudDir entry records an instance:
// what makes cloud-init compare IDs, or reuse a cache, at the next boot.
func isInstanceState(p string) bool {
	switch path.Base(p) {
	case "instance", "instances", "data", "sem", "handlers":
		return true
	}
	return false
}

func checkCloudInitState(in *inspection) Item {
	entries, id, logs, err := in.cloudState()
	if err != nil {
		return Item{Verdict: Error, Found: err.Error(), Paths: []string{CloudDir}}
	}
	it := Item{Verdict: OK, Paths: append(entries, logs...)}
	if len(entries) == 0 {
		it.Found = "none: cloud-init has not run in this image"
		if len(logs) > 0 {
			it.Verdict = Note
			it.Found += "; its logs are there (" + strings.Join(logs, ", ") + ")"
			it.Fix = in.cmd("seedkeeper image seal")
		}
		it.Clone = "cloud-init's first boot on a clone is a new instance"
		return it
	}
	if !slices.ContainsFunc(entries, isInstanceState) {
		it.Verdict = Note
		it.Found = "no instance state, but " + strings.Join(entries, ", ")
		if len(logs) > 0 {
			it.Found += "; logs " + strings.Join(logs, ", ")
		}
		it.Clone = "cloud-init's first boot on a clone is a new instance; image seal removes these as cloud-init clean does (keep scripts of your own elsewhere, e.g. in a package or a unit)"
		it.Fix = in.cmd("seedkeeper image seal")
		return it
	}
	it.Found = fmt.Sprintf("%d entries in %s", len(entries), CloudDir)
	if id != "" {
		it.Found += fmt.Sprintf(", instance ID %s (%s)", id, identity.CloudInitIDPath)
	}
	if len(logs) > 0 {
		it.Found += "; logs " + strings.Join(logs, ", ")
	}
	if in.seal != nil {
		it.Verdict = Note
		it.Clone = "the image is sealed, so seedkeeper makes the first boot of a clone a new instance anyway; cloud-init's old files stay on the disk"
		it.Fix = in.cmd("seedkeeper image seal")
		return it
	}
	it.Verdict = Finding
	st, _ := identity.Load(in.root)
	switch {
	case id == "":
		it.Clone = "cloud-init finds the template's per-instance files and caches; what it reuses depends on what is left"
	case st != nil && st.InstanceID != "":
		it.Clone = fmt.Sprintf("a clone with another machine identity (SMBIOS UUID) than %s is a new instance (rule 4), but one that keeps it keeps %s, with the template's SSH host keys, and per-instance modules do not run", st.MachineID, st.InstanceID)
	default:
		it.Clone = fmt.Sprintf("a clone whose source reports another explicit ID is a new instance, but with a derived ID (Proxmox NoCloud: the SHA-1 of user-data and network-config) or NoCloud's default seedkeeper adopts cloud-init's %s on its first run (rule 3): every clone keeps the template's instance ID and SSH host keys, and per-instance modules (users, runcmd, package upgrade) do not run", id)
	}
	it.Fix = in.cmd("seedkeeper image seal")
	return it
}

// seedkeeper's own state.

func checkSeedkeeperState(in *inspection) Item {
	it := Item{Verdict: OK}
	st, err := identity.Load(in.root)
	var found []string
	for _, p := range []string{paths.Identity, paths.Status, paths.Receipt, paths.Changes, paths.VMwareIMCMarker, paths.VMwareIMCSpec} {
		if in.exists(p) {
			it.Paths = append(it.Paths, p)
		}
	}
	switch {
	case err != nil:
		it.Verdict = Finding
		found = append(found, err.Error())
		it.Clone = "boot cannot read the pin: it keeps cloud-init's current ID and pins nothing until the file is fixed"
	case st != nil && st.InstanceID != "":
		found = append(found, fmt.Sprintf("pin %s for machine %s (rule %d, %s)", st.InstanceID, st.MachineID, st.Rule, st.RuleName))
		if in.seal != nil {
			it.Verdict = Note
			it.Clone = "the image is sealed: the first boot of a clone ignores the pin"
		} else {
			it.Verdict = Finding
			it.Clone = fmt.Sprintf("a clone with another machine identity drops the pin (rule 4) and is a new instance; a copy that keeps machine identity %s keeps instance ID %s", st.MachineID, st.InstanceID)
		}
	case st != nil && st.Reset != nil:
		it.Verdict = Note
		found = append(found, "a pending reset")
		it.Clone = "the first boot of a clone is a new instance (the reset)"
	default:
		found = append(found, "no pin")
		it.Clone = "the first boot of a clone decides its instance ID from its own metadata"
	}
	for _, p := range []string{paths.Status, paths.Receipt, paths.Changes, paths.VMwareIMCMarker} {
		if slices.Contains(it.Paths, p) {
			found = append(found, p+" from an earlier boot")
			if it.Verdict == OK {
				it.Verdict = Note
				it.Clone += "; status shows the template's last boot until the clone's first boot replaces it"
			}
		}
	}
	if slices.Contains(it.Paths, paths.VMwareIMCSpec) {
		found = append(found, paths.VMwareIMCSpec+": the VMware customization spec applied to this machine")
		it.Verdict = Finding
		it.Clone += "; a clone on VMware whose guestinfo is empty and that gets no customization spec of its own applies this machine's customization again (its hostname and network)"
	}
	it.Found = strings.Join(found, "; ")
	if it.Verdict != OK {
		it.Fix = in.cmd("seedkeeper image seal")
	}
	return it
}

func checkSealed(in *inspection) Item {
	it := Item{Paths: []string{identity.SealedPath}}
	if in.seal == nil {
		it.Verdict = Note
		it.Found = "not sealed"
		it.Clone = "the first boot of a clone follows the identity rules with whatever state the image holds"
		it.Fix = in.cmd("seedkeeper image seal") + " (the last step of the build)"
		return it
	}
	it.Verdict = OK
	it.Found = "sealed"
	if !in.seal.SealedAt.IsZero() {
		it.Found += " at " + in.seal.SealedAt.Format("2006-01-02T15:04:05Z07:00")
	}
	it.Clone = "the first boot of every clone is a new instance (rule 6), even for derived-ID sources; that boot removes the marker"
	return it
}

// Machine IDs.

// Machine ID files.
const (
	MachineIDPath     = paths.MachineID
	DBusMachineIDPath = paths.DBusMachineID
)

func checkMachineID(in *inspection) Item {
	it := Item{Verdict: OK, Paths: []string{MachineIDPath}}
	var found []string
	real, err := fsutil.ResolveIn(string(in.root), MachineIDPath, true)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Item{Verdict: Error, Found: err.Error(), Paths: it.Paths}
	}
	if err != nil {
		real = MachineIDPath
	}
	if real != MachineIDPath {
		found = append(found, MachineIDPath+" is a link to "+real)
	}
	data, err := in.readSmall(MachineIDPath)
	v := strings.TrimSpace(string(data))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		it.Verdict = Note
		found = append(found, "missing")
		it.Clone = "systemd generates a machine ID at first boot (transient when /etc is read-only); an empty file is the usual way to ship an image"
	case err != nil:
		return Item{Verdict: Error, Found: err.Error(), Paths: it.Paths}
	case v == "" || v == "uninitialized":
		found = append(found, "empty")
		it.Clone = "systemd generates a new machine ID at first boot and treats it as the first boot"
	default:
		it.Verdict = Finding
		found = append(found, "filled")
		it.Clone = "every clone has the template's machine ID: the same DHCP client ID and IPv6 address (networkd derives them from it), the same journal and D-Bus identity"
	}
	if fi, err := fsutil.StatIn(string(in.root), DBusMachineIDPath, false); err == nil {
		it.Paths = append(it.Paths, DBusMachineIDPath)
		if fi.Mode()&fs.ModeSymlink != 0 {
			found = append(found, DBusMachineIDPath+" is a link")
		} else if fi.Size() > 0 {
			it.Verdict = Finding
			found = append(found, DBusMachineIDPath+" is a filled file, not a link")
			it.Clone += "; D-Bus keeps the template's ID from " + DBusMachineIDPath
		}
	}
	it.Found = strings.Join(found, "; ")
	if it.Verdict == Finding {
		it.Fix = in.cmd("seedkeeper image seal")
	}
	return it
}

// SSH host keys.

// SSHDir holds the host keys.
const SSHDir = paths.SSHDir

func (in *inspection) hostKeys() ([]string, error) {
	ents, err := fsutil.ReadDirIn(string(in.root), SSHDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dir, err := fsutil.ResolveIn(string(in.root), SSHDir, true)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "ssh_host_") && !e.IsDir() {
			keys = append(keys, path.Join(dir, e.Name()))
		}
	}
	return keys, nil
}

func checkSSHHostKeys(in *inspection) Item {
	keys, err := in.hostKeys()
	if err != nil {
		return Item{Verdict: Error, Found: err.Error(), Paths: []string{SSHDir}}
	}
	it := Item{Verdict: OK, Paths: keys}
	cloudInit := in.unit("cloud-init-local.service").File != ""
	sshd := in.exists("/usr/sbin/sshd")
	if len(keys) == 0 {
		it.Found = "none"
		switch {
		case !sshd:
			it.Clone = "no SSH server is installed"
		case cloudInit:
			it.Clone = "cloud-init's ssh module generates new host keys at the first boot of each clone"
		case in.unitExists("sshd-keygen.service", "sshd-keygen@.service"):
			it.Clone = "sshd-keygen generates new host keys at the first boot of each clone"
		default:
			it.Verdict = Finding
			it.Clone = "sshd has no host keys and nothing in the image makes them: it does not start"
			it.Fix = "keep the host keys (seedkeeper image seal --keep-ssh-host-keys) or add a unit that runs ssh-keygen -A before the SSH server"
		}
		return it
	}
	it.Found = fmt.Sprintf("%d host key file(s) in %s", len(keys), SSHDir)
	entries, _, _, _ := in.cloudState()
	deletes := true
	if s := in.cc.lookup("ssh_deletekeys"); s.Set() && s.Value == false {
		deletes = false
	}
	switch {
	case cloudInit && deletes && (len(entries) == 0 || in.seal != nil):
		it.Verdict = Note
		it.Clone = "cloud-init's ssh module deletes them and generates new ones at the first boot of each clone (a new instance)"
	case !cloudInit:
		it.Verdict = Finding
		it.Clone = "every clone has the template's host keys: SSH clients cannot tell the clones apart"
	case !deletes:
		it.Verdict = Finding
		it.Clone = "every clone keeps the template's host keys: ssh_deletekeys is false in " + in.cc.lookup("ssh_deletekeys").File
	default:
		it.Verdict = Finding
		it.Clone = "a clone that is not a new instance for cloud-init (see cloud-init-state) keeps the template's host keys"
	}
	if it.Verdict == Finding {
		it.Fix = in.cmd("seedkeeper image seal")
	}
	return it
}

// unitExists reports whether any of the named unit files is in the image.
func (in *inspection) unitExists(names ...string) bool {
	for _, n := range names {
		if st := in.unit(n); st.File != "" && !st.Masked {
			return true
		}
	}
	return false
}

// Network stack.

// stackTitles names the stacks of l for people.
func stackTitles(l []*netcfg.Stack) string {
	var names []string
	for _, s := range l {
		names = append(names, s.Title)
	}
	return strings.Join(names, " and ")
}

// checkNetworkStack says which stack boot renders for, decided as boot
// decides it (netcfg.DetectStack): the same answer on the same root.
func checkNetworkStack(in *inspection) Item {
	it := Item{Verdict: OK}
	detect := netcfg.DetectImageStack
	if in.root.IsReal() {
		detect = netcfg.DetectStack
	}
	d, err := detect(in.root.Path("/"))
	if err != nil {
		// Only a stack whose directory the image decides fails here,
		// on the file that decides it.
		it.Verdict, it.Found = Finding, err.Error()
		it.Clone = "seedkeeper boot cannot tell where to write the persistent network configuration: its network step fails"
		if d.Stack != nil {
			conf := stacks.Of(d.Stack.Name).Dir.Config
			it.Fix, it.Paths = "fix "+conf, []string{conf}
		}
		return it
	}
	it.Paths = d.Paths
	if len(d.Enabled) == 0 {
		it.Found = "no network service is enabled (" + d.Reason + ")"
	} else {
		it.Found = stackTitles(d.Enabled) + " enabled"
	}
	for _, n := range d.Notes {
		it.Found += "; " + n
	}
	np := stacks.DetectNetplan(unit.Root{Dir: in.root.Path("/"), Live: in.root.IsReal()})
	catchAll := netplanFound(&it, np)
	owner := in.cfg.Network.Owner
	if owner == "cloud-init" {
		it.Found += "; network.owner: cloud-init"
		it.Clone = "seedkeeper leaves the network to cloud-init, which renders for the stack it finds"
		return it
	}
	if d.Stack == nil {
		it.Verdict = Finding
		it.Clone = "seedkeeper applies static addresses of the NICs it owns live, but nothing runs DHCP or reads its rendered files, and the links stay down for other software"
		it.Fix = in.systemctl("enable " + netcfg.Networkd.Unit) // the stack boot renders for when none runs
		return it
	}
	if w := stacks.Of(d.Stack.Name).Dir; w.Config != "" {
		// A stack whose directory the image decides.
		if d.Dir == "" {
			it.Found += "; " + w.None
			it.Verdict, it.Clone, it.Fix = Finding, w.Clone, w.Fix
			return it
		}
		it.Found += "; " + fmt.Sprintf(w.Found, d.Dir)
	}
	if len(d.Enabled) > 1 {
		it.Verdict = Note
		it.Clone = fmt.Sprintf("seedkeeper renders owned NICs for %s; %s runs too and may also manage them unless it is told to leave them alone", d.Stack.Title, stackTitles(d.Enabled[1:]))
		return it
	}
	it.Clone = "seedkeeper owns the NICs the metadata names (allowlisted drivers) and renders them for " + d.Stack.Title
	if over := stacks.Of(d.Stack.Name).Netplan; over != nil && np != nil {
		for _, e := range np.Entries {
			if why, fix, ok := over(e.Renderer); e.CatchAll() && !ok {
				it.Verdict = Finding
				it.Clone += "; but the catch-all " + e.ID + ": " + why
				it.Fix = fix
				return it
			}
		}
	}
	if catchAll {
		// Not a finding: seedkeeper's files come first on the NICs it
		// owns (stacks.NetplanInfo), and the catch-all takes the others
		// as the image's builder meant.
		it.Verdict = Note
		it.Clone += "; netplan's catch-all also matches the NICs seedkeeper will own, but " + d.Stack.Title + " gives those seedkeeper's configuration (its files come first), so the catch-all configures only the NICs seedkeeper does not own; boot's status names each owned NIC it matches"
	}
	return it
}

// netplanFound adds to it what netplan renders at boot on the image: its
// files (to Paths), what could not be read, and its catch-all entries,
// which would take any NIC seedkeeper owns; it reports whether there is
// one.
func netplanFound(it *Item, np *stacks.NetplanInfo) bool {
	if np == nil {
		return false
	}
	it.Paths = append(it.Paths, np.Files...)
	it.Found += fmt.Sprintf("; netplan renders %d file(s) at boot (its generator %s)", len(np.Files), np.Generator)
	for _, n := range np.Notes {
		it.Found += "; " + n
	}
	var all []string
	for _, e := range np.Entries {
		if e.CatchAll() {
			all = append(all, fmt.Sprintf("%s entry %s (%s, for %s)", e.File, e.ID, e.Describe(), e.Renderer))
		}
	}
	if len(all) > 0 {
		it.Found += "; netplan catch-all: " + strings.Join(all, ", ")
	}
	return len(all) > 0
}

// The allowlist.

func checkAllowlist(in *inspection) Item {
	it := Item{Verdict: OK, Paths: []string{config.DefaultPath}}
	if in.cfgErr != nil {
		it.Verdict = Finding
		it.Found = in.cfgErr.Error()
		it.Clone = "boot runs on the default settings and the hotplug daemon allows no driver: NICs added after boot get no network"
		it.Fix = "fix " + config.DefaultPath
		return it
	}
	if in.cfg.HotplugDriversSet() {
		v, err := in.cfg.HotplugDriversValue()
		a := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{Set: true, Value: v, Err: err}, "")
		it.Found = a.String()
		if a.Reason() != "" {
			it.Verdict = Finding
			it.Clone = "hotplug allows no driver: NICs added after boot get no network"
			it.Fix = "fix hotplug.drivers in " + config.DefaultPath
			return it
		}
		it.Clone = "NICs with these drivers are configured on hotplug, unless the metadata sets its own list"
		return it
	}
	kvm := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{}, "kvm")
	vmw := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{}, "vmware")
	it.Found = "hotplug.drivers is not set: the platform's default is in effect"
	it.Clone = fmt.Sprintf("on KVM, QEMU, Proxmox, bhyve and SmartOS NICs with drivers %s, on VMware %s, are configured on hotplug (the metadata may set its own list); on other platforms none until hotplug.drivers is set",
		strings.Join(kvm.Drivers(), ","), strings.Join(vmw.Drivers(), ","))
	return it
}

// The seed directory.

func checkSeedDir(in *inspection) Item {
	it := Item{Verdict: OK}
	owned, err := seed.Owned(string(in.root))
	if err != nil {
		return Item{Verdict: Error, Found: err.Error(), Paths: []string{seed.Dir}}
	}
	files := in.seedFiles()
	imported := in.exists(seed.ImportDir)
	var found []string
	switch {
	case owned:
		it.Verdict = Note
		it.Paths = append(it.Paths, seed.Dir)
		found = append(found, "seedkeeper's seed from an earlier boot (it holds that boot's user-data)")
		it.Clone = "boot writes the seed again from the clone's own metadata"
		it.Fix = in.cmd("seedkeeper image seal")
	case len(files) > 0:
		it.Verdict = Note
		it.Paths = append(it.Paths, seed.Dir)
		found = append(found, "a seed a person put there ("+strings.Join(files, ", ")+")")
		it.Clone = "the first boot of every clone imports this seed and every clone reads it (with the same instance ID, if it sets one) when the platform offers no source of its own; image seal keeps it"
	default:
		found = append(found, "empty")
		it.Clone = "boot writes the seed from the clone's own metadata"
	}
	if imported {
		it.Verdict = Note
		it.Paths = append(it.Paths, seed.ImportDir)
		found = append(found, "a person's seed imported by an earlier boot into "+seed.ImportDir)
		it.Clone += "; every clone reads the imported seed when the platform offers no source of its own"
	}
	it.Found = strings.Join(found, "; ")
	return it
}

// seedFiles lists the regular files in the seed directory but the marker.
func (in *inspection) seedFiles() []string {
	ents, _ := fsutil.ReadDirIn(string(in.root), seed.Dir)
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

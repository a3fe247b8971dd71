// Package paths is the one list of the system paths seedkeeper and
// cloud-init keep their state and configuration in, as seen from "/" (an
// image's root stands for "/" under --root). Every package that names one
// of these paths takes it from here, so that boot, image check, image seal
// and the NoCloud reader cannot disagree about where a file is.
package paths

// seedkeeper's own state.
const (
	// StateDir holds seedkeeper's state; seedkeeper owns it.
	StateDir = "/var/lib/seedkeeper"
	// Identity holds the identity pin.
	Identity = StateDir + "/identity.json"
	// Status is the status of the last boot.
	Status = StateDir + "/status.json"
	// Receipt records the NICs seedkeeper configured.
	Receipt = StateDir + "/network-receipt.json"
	// Changes is the record of the last boot's metadata, setting by
	// setting, and the receipt of the SSH keys it put in place.
	Changes = StateDir + "/changes.json"
	// ChangesBad is a record that could not be read, kept aside.
	ChangesBad = Changes + ".bad"
	// VMwareIMCMarker holds the MARKER-ID of the last VMware
	// customization spec applied: a spec with that marker is not
	// applied again.
	VMwareIMCMarker = StateDir + "/vmware-imc-marker"
	// VMwareIMCSpec holds the last VMware customization spec applied,
	// without its password: what a later boot that finds no spec and no
	// guestinfo reads again, so that the customization holds.
	VMwareIMCSpec = StateDir + "/vmware-imc-spec.json"
	// Sealed is the marker "seedkeeper image seal" leaves.
	Sealed = StateDir + "/sealed"
	// ImportedSeed holds a seed a person put into SeedDir before
	// seedkeeper first ran.
	ImportedSeed = StateDir + "/imported-seed"
)

// cloud-init's state.
const (
	// CloudDir is cloud-init's state directory; "cloud-init clean"
	// removes all of it but seed/.
	CloudDir = "/var/lib/cloud"
	// CloudInitID is where cloud-init keeps the instance ID of its last
	// run.
	CloudInitID = CloudDir + "/data/instance-id"
	// CloudInitInstance is cloud-init's link to the directory of the
	// current instance, CloudDir/instances/<id>.
	CloudInitInstance = CloudDir + "/instance"
	// SeedDir is cloud-init's NoCloud seed directory, where seedkeeper
	// writes its seed.
	SeedDir = CloudDir + "/seed/nocloud"
	// SeedNetDir is NoCloud's second seed directory.
	SeedNetDir = CloudDir + "/seed/nocloud-net"
	// PerBootDir is cloud-init's per-boot scripts directory.
	PerBootDir = CloudDir + "/scripts/per-boot"
	// CloudInitLog is cloud-init's log when def_log_file is not set.
	CloudInitLog = "/var/log/cloud-init.log"
)

// SeedDirs are the NoCloud seed directories cloud-init reads (NoCloud's
// seed_dirs), the first holding the seed seedkeeper writes.
var SeedDirs = []string{SeedDir, SeedNetDir}

// cloud-init's configuration.
const (
	CloudCfg  = "/etc/cloud/cloud.cfg"
	CloudCfgD = "/etc/cloud/cloud.cfg.d"
	// DropIn is the drop-in seedkeeper's package ships.
	DropIn = CloudCfgD + "/95-seedkeeper.cfg"
)

// The machine's identities that a clone must not share.
const (
	MachineID     = "/etc/machine-id"
	DBusMachineID = "/var/lib/dbus/machine-id"
	// SSHDir holds the SSH host keys.
	SSHDir = "/etc/ssh"
)

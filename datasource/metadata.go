package datasource

import "github.com/seedkeeper/seedkeeper/netcfg"

// The names of the sources in the table (Source.Name), as used in the
// configuration, on the command line, in logs and in JSON.
const (
	SourceSmartOS = "smartos"
	SourceVMware  = "vmware"
	SourceNoCloud = "nocloud"
)

// Metadata is what one source said about this instance, normalized.
type Metadata struct {
	// Source is the name of the source in the table (Names).
	Source string
	// Origin says where the data was read: the transport or device, and
	// the files or keys used.
	Origin Origin

	// InstanceID is the ID the source reported, before any identity
	// decision.
	InstanceID string
	// InstanceIDDefaulted is true when the source had no ID and the
	// platform default was used (NoCloud's "nocloud").
	InstanceIDDefaulted bool
	// MachineID is the identity of the machine itself: DMI product_uuid,
	// or sdc:uuid on SmartOS. Empty when none could be read.
	MachineID string

	Hostname   string
	PublicKeys []string
	// PublicKeysDropped counts the public keys the source gave that were
	// left out as unusable (Warnings say which): PublicKeys is then not
	// all the source meant, which a reader comparing boots must know.
	PublicKeysDropped int

	// UserData and VendorData are kept byte for byte as the source gave
	// them. They are secrets: never log them.
	UserData   []byte
	VendorData []byte

	// NetworkConfigRaw is the network configuration document exactly as
	// found (nil when the source has none), and Network its parsed form.
	// A nil Network means: leave the network alone.
	NetworkConfigRaw []byte
	Network          *netcfg.Config

	// NetworkDrivers is the hotplug driver allowlist the metadata asks
	// for (VMware network-drivers, seedkeeper:network-drivers), and
	// NetworkDriversSet whether it asked at all.
	NetworkDrivers    []string
	NetworkDriversSet bool

	// WaitOnNetwork is what the VMware metadata's wait-on-network asks
	// boot to wait for before cloud-init goes on; the zero value waits
	// for nothing.
	WaitOnNetwork WaitOnNetwork

	// MetaData is the merged meta-data document (NoCloud, VMware), for
	// keys the model has no field for.
	MetaData map[string]any

	// VMwareIMC is what a VMware customization spec said beyond the
	// fields above (its kind, marker, reporting); nil for every other
	// transport.
	VMwareIMC *IMCSpec

	// SmartOS holds what only SmartOS has; nil elsewhere.
	SmartOS *SmartOSExtras

	// Warnings name the fields that were dropped or normalised because
	// they could not be used as they were (a public key with a control
	// character, an instance ID that is not a directory name, a network
	// configuration that does not parse): the rest of the metadata is
	// used without them. They describe the field, never quote its value.
	Warnings []string
}

// Origin records where metadata was read.
type Origin struct {
	// Transport is how it was read: "serial:/dev/ttyS1",
	// "unix:/native/.zonecontrol/metadata.sock", "vmware-rpctool",
	// "dir:/var/lib/cloud/seed/nocloud", "iso9660:/dev/sr0", ...
	Transport string
	// Items lists the files or keys that contributed, in order.
	Items []string
}

// SmartOSExtras are the SmartOS keys that have guest behaviour of their own.
type SmartOSExtras struct {
	UserScript       []byte // user-script: run every boot
	OperatorScript   []byte // sdc:operator-script: run every boot, first
	LegacyUserData   []byte // user-data: written to /var/db/mdata-user-data
	HasUserScript    bool
	HasOperator      bool
	HasLegacyUser    bool
	AvailabilityZone string // sdc:datacenter_name
	DNSDomain        string // sdc:dns_domain
}

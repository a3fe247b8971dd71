package identity

import (
	"strings"
)

// unknownValue is an input value that means "unknown" rather than naming an
// instance or a machine. Such a value never becomes a pin, is never adopted
// and is never a machine identity.
type unknownValue struct {
	// value is normalised: trimmed and lower-cased.
	value string
	// why says in a few words what the value means, for explanations.
	why string
}

// placeholderIDs are instance IDs that stand for "no instance". The sources
// say where each one comes from.
var placeholderIDs = []unknownValue{
	// cloud-init's DataSourceNone (cloudinit/sources/DataSourceNone.py,
	// get_instance_id, the same in 22.4.2 and upstream today): what
	// cloud-init records in /var/lib/cloud/data/instance-id when it ran
	// with no datasource at all. Every machine that ever ran without a
	// source has it, so it names nothing.
	{"iid-datasource-none", "cloud-init's placeholder for \"no datasource\" (DataSourceNone)"},
	// cloud-init's stages.py NO_PREVIOUS_INSTANCE_ID: written to
	// /var/lib/cloud/data/previous-instance-id when there was none; never
	// a real ID wherever it is found.
	{"no_previous_instance_id", "cloud-init's marker for \"no previous instance\""},
}

// unknownMachineIDs are machine identities (DMI product_uuid, SmartOS
// sdc:uuid) that say "unknown", or that every machine of a kind shares.
// All-zero and all-F UUIDs in any spelling are matched by pattern as well
// (see unknownMachineID).
var unknownMachineIDs = []unknownValue{
	// Nothing readable: no /sys/class/dmi/id/product_uuid (Linux omits the
	// file when the SMBIOS UUID is all 00h or all FFh, and Firecracker
	// and Xen PV guests have no DMI), an empty file, an empty sdc:uuid.
	{"", "no machine identity could be read"},
	// SMBIOS 2.6+ §7.2.1: a UUID of all 00h means "not present" (QEMU
	// without -uuid reports it), all FFh "not present but settable".
	// FreeBSD's loader (kenv smbios.system.uuid) and dmidecode print
	// these words instead of the bytes.
	{"not present", "SMBIOS \"UUID not present\""},
	{"not settable", "SMBIOS \"UUID not set\" (all FFh)"},
	// dmidecode and FreeBSD's kenv print "Not Specified" for an SMBIOS
	// string the firmware left empty; "None" is what some firmware and
	// tools put there.
	{"not specified", "an SMBIOS field the firmware left empty"},
	{"none", "an SMBIOS field the firmware left empty"},
	// AMI Aptio and older AMI BIOS defaults that board vendors ship
	// unchanged: the same text on every board of a model.
	{"default string", "a firmware default string shared by every board of a model"},
	{"to be filled by o.e.m.", "a firmware default string shared by every board of a model"},
	// AMI's default system UUID (the byte sequence 00 02 00 03 ... 09 as
	// Linux prints it): shipped unchanged on many boards, so every one of
	// them reports the same value.
	{"03000200-0400-0500-0006-000700080009", "AMI firmware's default UUID, shared by every board that ships it"},
}

// PlaceholderID reports whether id is a placeholder that stands for "no
// instance" rather than an instance ID, and if so what it means.
func PlaceholderID(id string) (why string, ok bool) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return "an empty instance ID", true
	}
	for _, u := range placeholderIDs {
		if id == u.value {
			return u.why, true
		}
	}
	return "", false
}

// unknownMachineID reports whether the machine identity s says "unknown"
// (or is shared by every clone), and if so what it means.
func unknownMachineID(s string) (why string, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, u := range unknownMachineIDs {
		if s == u.value {
			return u.why, true
		}
	}
	// All zeros or all F in any spelling (with or without dashes or
	// braces): SMBIOS's "not present" and "not set".
	bare := strings.Trim(s, "{}")
	if strings.Trim(bare, "0-") == "" {
		return "an all-zero UUID (SMBIOS \"not present\"), which every such machine shares", true
	}
	if strings.Trim(bare, "f-") == "" {
		return "an all-F UUID (SMBIOS \"not set\"), which every such machine shares", true
	}
	return "", false
}

// MachineIdentity normalises a machine identity: trimmed and lower-cased,
// and empty for values that identify no machine (see unknownMachineIDs:
// all zeros, all F, firmware placeholder strings, UUIDs every board of a
// model shares).
func MachineIdentity(s string) string {
	if _, ok := unknownMachineID(s); ok {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(s))
}

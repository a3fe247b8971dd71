package intent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/datasource"
)

// Applier says who carries a changed setting to a kept instance.
type Applier string

// The appliers.
const (
	// BySeedkeeper: seedkeeper applies it at this boot (keys, passwords,
	// the network, the SmartOS scripts).
	BySeedkeeper Applier = "seedkeeper"
	// ByCloudInit: cloud-init applies it at this boot, from the seed
	// seedkeeper hands it, through a module that runs on every boot.
	ByCloudInit Applier = "cloud-init"
	// NewInstance: only the first boot of an instance applies it, for
	// the reason given.
	NewInstance Applier = "new-instance"
)

// Rule is what happens when one setting changes on a kept instance.
type Rule struct {
	// Setting is the setting's name, or a prefix ending in ':' for a
	// family (keys:USER, user-data:KEY).
	Setting string
	Applier Applier
	// How says by what (BySeedkeeper, ByCloudInit) or why it waits
	// (NewInstance).
	How string
}

// Rules is the table of what happens to each setting; Lookup finds a
// setting's row, and the documentation's table is pinned to it by a
// test. The default row, for any other user-data key, is the last.
var Rules = []Rule{
	{"keys:", BySeedkeeper, "added keys are appended to the user's authorized_keys; a removed key is removed only if the metadata had put it there"},
	{"password:", BySeedkeeper, "set with chpasswd as cloud-init's set_passwords sets it (chpasswd.expire honoured)"},
	{"hostname", ByCloudInit, "meta-data local-hostname: set_hostname and update_hostname run on every boot and apply it once cloud-init re-reads the seed"},
	{"network", BySeedkeeper, "the network step plans and applies it (events.network)"},
	{"network-drivers", BySeedkeeper, "the hotplug driver allowlist in force from this boot"},
	{"user-data:hostname", ByCloudInit, "set_hostname and update_hostname run on every boot and apply it once cloud-init re-reads the seed"},
	{"user-data:fqdn", ByCloudInit, "set_hostname and update_hostname run on every boot and apply it once cloud-init re-reads the seed"},
	{"user-data:manage_etc_hosts", ByCloudInit, "update_etc_hosts runs on every boot"},
	{"user-data:preserve_hostname", ByCloudInit, "read by the hostname modules on every boot"},
	{"user-data:prefer_fqdn_over_hostname", ByCloudInit, "read by the hostname modules on every boot"},
	{"user-data:bootcmd", ByCloudInit, "bootcmd runs on every boot"},
	{"user-data:growpart", ByCloudInit, "growpart runs on every boot"},
	{"user-data:resize_rootfs", ByCloudInit, "resizefs runs on every boot"},
	{"user-data:final_message", ByCloudInit, "final_message runs on every boot"},
	{"user-data:user", NewInstance, "cloud-init creates (or renames) the default user once per instance; the keys and password of the user named are applied"},
	{"user-data:users", NewInstance, "cloud-init creates users once per instance (users_groups); the keys of users that exist are applied"},
	{"user-data:package_upgrade", NewInstance, "a package upgrade on a reboot is what a kept instance ID exists to avoid"},
	{"user-data:package_update", NewInstance, "package updates run once per instance"},
	{"user-data:packages", NewInstance, "packages are installed once per instance"},
	{"user-data:runcmd", NewInstance, "runcmd runs once per instance: running it again would redo a first boot"},
	{"user-data:write_files", NewInstance, "write_files runs once per instance: it would overwrite what a person changed since"},
	{"user-data", NewInstance, "the user-data is not a #cloud-config document: its parts run once per instance"},
	{"vendor-data", NewInstance, "vendor-data parts run once per instance (its per-boot modules run from the new seed)"},
	{"user-script", BySeedkeeper, "SmartOS user-script: written as a per-boot script, it runs on every boot"},
	{"operator-script", BySeedkeeper, "SmartOS sdc:operator-script: written as a per-boot script, it runs on every boot"},
	{"legacy-user-data", BySeedkeeper, "SmartOS user-data: written to /var/db/mdata-user-data at every boot"},
	{"user-data:", NewInstance, "cloud-init runs that module once per instance"},
}

// Lookup returns the row of the table that decides setting: its own row,
// else its family's.
func Lookup(setting string) Rule {
	for _, r := range Rules {
		if r.Setting == setting {
			return r
		}
	}
	for _, r := range Rules {
		if strings.HasSuffix(r.Setting, ":") && strings.HasPrefix(setting, r.Setting) {
			return r
		}
	}
	return Rule{Setting: setting, Applier: NewInstance, How: "not a setting seedkeeper knows"}
}

// Desired is what this boot's metadata asks for, in clear (never saved):
// the keys and passwords Apply may set, and the salted digest of every
// setting, which is what the record keeps.
type Desired struct {
	// DefaultUser is the user the metadata's keys and the top-level
	// password are for; "" when none is known.
	DefaultUser string
	// Keys are the public keys per user name, as the metadata gives them.
	Keys map[string][]string
	// KeysPartial names the users an entry of whose keys was dropped as
	// unusable: the set is not all the metadata means, so no key of
	// theirs is removed at this boot.
	KeysPartial map[string]bool
	// Passwords are per user name.
	Passwords map[string]Password
	// Expire is chpasswd.expire.
	Expire bool
	// Settings maps a setting name to its digest.
	Settings map[string]string
	// CloudInit is the digest of everything of the seed cloud-init reads
	// (meta-data, user-data, vendor-data): when it changes on a kept
	// instance, cloud-init must read the seed again.
	CloudInit string
	// UserDataBroken is true when the user-data is a #cloud-config that
	// does not decode: the settings it names are not compared.
	UserDataBroken bool
	// UserDataKeys are the fingerprints, per user, of the keys the
	// user-data names (none when it does not decode).
	UserDataKeys map[string][]string
	// Warnings name the fields left out.
	Warnings []string
}

// Input is what Settings reads.
type Input struct {
	Metadata *datasource.Metadata
	// ImageDefaultUser is system_info.default_user.name of the image's
	// cloud-init configuration ("" when it has none).
	ImageDefaultUser string
	// Salt is mixed into every digest (the record's).
	Salt string
}

// Settings reads the settings of one boot's metadata.
func Settings(in Input) Desired {
	md := in.Metadata
	d := Desired{Keys: map[string][]string{}, KeysPartial: map[string]bool{}, Passwords: map[string]Password{}, Settings: map[string]string{}, Expire: true}
	dig := func(parts ...[]byte) string { return digest(in.Salt, parts...) }
	set := func(name string, parts ...[]byte) { d.Settings[name] = dig(parts...) }

	if md.Hostname != "" {
		set("hostname", []byte(md.Hostname))
	}
	if md.NetworkConfigRaw != nil {
		set("network", md.NetworkConfigRaw)
	}
	if md.NetworkDriversSet {
		set("network-drivers", []byte(strings.Join(md.NetworkDrivers, "\n")))
	}
	if len(md.VendorData) > 0 {
		set("vendor-data", md.VendorData)
	}
	if s := md.SmartOS; s != nil {
		for name, b := range map[string][]byte{"user-script": s.UserScript, "operator-script": s.OperatorScript, "legacy-user-data": s.LegacyUserData} {
			if b != nil {
				set(name, b)
			}
		}
	}

	cc := ParseCloudConfig(md.UserData)
	d.Warnings = cc.Warnings
	d.UserDataBroken = cc.Broken
	if !cc.Parsed && !cc.Broken && len(md.UserData) > 0 {
		set("user-data", md.UserData)
	}
	for k, v := range cc.Top {
		set(topSetting(in.Salt, k), v)
	}
	d.DefaultUser = cc.DefaultUser
	if d.DefaultUser == "" {
		d.DefaultUser = in.ImageDefaultUser
	}
	if d.DefaultUser != "" {
		d.Keys[d.DefaultUser] = append(slices.Clone(md.PublicKeys), cc.Keys...)
		d.KeysPartial[d.DefaultUser] = cc.KeysPartial || md.PublicKeysDropped > 0
	} else if len(md.PublicKeys)+len(cc.Keys) > 0 {
		d.Warnings = append(d.Warnings, "public keys: no default user is named (user-data user, or the image's system_info.default_user); they wait for cloud-init at a new instance")
	}
	d.UserDataKeys = map[string][]string{}
	if d.DefaultUser != "" && len(cc.Keys) > 0 {
		d.UserDataKeys[d.DefaultUser] = Fingerprints(cc.Keys)
	}
	for _, u := range cc.Users {
		if len(u.Keys) > 0 {
			d.UserDataKeys[u.Name] = append(d.UserDataKeys[u.Name], Fingerprints(u.Keys)...)
		}
		d.Keys[u.Name] = append(d.Keys[u.Name], u.Keys...)
		d.KeysPartial[u.Name] = d.KeysPartial[u.Name] || u.KeysPartial
	}
	for user, keys := range d.Keys {
		// A set with a key dropped differs from the same set whole, so
		// that the boot that finds it whole again removes what it must.
		partial := ""
		if d.KeysPartial[user] {
			partial = "\npartial"
		}
		set("keys:"+user, []byte(keySetText(keys)+partial))
	}
	d.Expire = cc.Expire
	pws := cc.Passwords
	if cc.Password != nil && len(cc.Passwords) == 0 {
		// cloud-init uses the top-level password only when chpasswd
		// names no user, and for the default user.
		if d.DefaultUser != "" {
			p := *cc.Password
			p.User = d.DefaultUser
			pws = []Password{p}
		} else {
			d.Warnings = append(d.Warnings, "password: no default user is named; it waits for cloud-init at a new instance")
		}
	}
	for _, p := range pws {
		d.Passwords[p.User] = p
		kind := "text"
		switch {
		case p.Random:
			kind = "random"
		case p.Hashed:
			kind = "hash"
		}
		set("password:"+p.User, []byte(kind), []byte(p.Value), []byte(fmt.Sprint(cc.Expire)))
	}

	d.CloudInit = dig([]byte(md.Hostname), []byte(strings.Join(md.PublicKeys, "\n")), md.UserData, md.VendorData)
	return d
}

// topSetting is the setting name of a top-level user-data key, which the
// status shows: "user-data:KEY" for a plain name, else a description that
// does not quote the key, told apart from another key of the same length
// by a salted digest of it.
func topSetting(salt, k string) string {
	if safeKey(k) == k {
		return "user-data:" + k
	}
	return fmt.Sprintf("user-data:(a key of %d bytes, %s)", len(k), digest(salt, []byte(k))[:12])
}

// keySetText is the canonical text of a set of keys: their fingerprints,
// sorted and without repeats. The order of the keys, their comments and
// the spacing of a line do not change it; options do.
func keySetText(keys []string) string {
	var fps []string
	for _, l := range keys {
		if k, ok := ParseKey(l); ok {
			fps = append(fps, k.Fingerprint())
		} else {
			// Not a shape ParseKey knows: the line itself, trimmed.
			fps = append(fps, "line:"+strings.Join(strings.Fields(l), " "))
		}
	}
	slices.Sort(fps)
	return strings.Join(slices.Compact(fps), "\n")
}

// digest is the salted SHA-256 of parts, each preceded by its length so
// that moving bytes between parts changes it.
func digest(salt string, parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte(salt))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%d\x00", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

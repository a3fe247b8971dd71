package datasource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// The specs in testdata/vmware/imc take the shapes of the specs cloud-init
// tests its reader with (two DHCP NICs, with and without MISC, two static
// NICs with IPv6 and several gateways), and more: a PRIMARY NIC, IPv4
// disabled, every kind of bad value, and the [CLOUDINIT] kind. What
// cloud-init's reader (cloudinit/sources/helpers/vmware/imc, with the
// NIC names as device names) gives for each, and where seedkeeper differs
// on purpose:
//
//	spec                    cloud-init                                      seedkeeper (difference)
//	dhcp-2nic               local-hostname web01.corp.example.com;         same hostname, DMI instance ID, timezone;
//	                        instance-id from DMI product_uuid; timezone    the password and timezone are cloud-config
//	                        in the datasource config; root password set    in vendor-data (chpasswd, expire: false);
//	                        by cloud-init itself; per NIC: match MAC,       no set-name (the NICs keep their names),
//	                        set-name, wakeonlan: true (from ONBOOT),        no wakeonlan (ONBOOT is not wake-on-LAN),
//	                        dhcp4, use-dns: false (the spec has a          use-dns kept: DNSFROMDHCP = yes and the spec
//	                        suffix), nameservers.search                    has no server, so DHCP's servers are used
//	dhcp-2nic-instance-id   as above, instance-id from MISC                 same; MARKER-ID and POST-GC-STATUS kept
//	static-2nic             crashes: "NICS = NIC1, NIC2" names " NIC2"      names trimmed; with no PRIMARY NIC the first
//	                        (with "NIC1,NIC2": no PRIMARY, so each          NIC with a gateway gets the default routes
//	                        gateway is a route to the NIC's own subnet     via its first gateway (vSphere's gateways are
//	                        through it, and no default route at all)       default gateways), the others none
//	static-primary          default routes on NIC2 only                     same
//	ipv4-disabled           IPv4_MODE DISABLED becomes DHCPv4               no IPv4 at all: dhcp4: false
//	bad-nics                refused whole: configparser's duplicate key    NIC1 kept; NIC2-5 and the second NIC1
//	                        in [NIC5]; without it, the bad MAC fails the   dropped, each with a warning; every bad value
//	                        network (event 101), the hostname, time zone,  (hostname, DNS entries, time zone, password,
//	                        marker and instance ID are used as written     RESET, marker, instance ID) dropped
//	cloudinit               meta-data and user-data as written              same
//	cloudinit-missing       event 100, no data                              error: the file named is not there
//	cloudinit-escape        reads ../../../etc/shadow as meta-data         refused: not a file in the spec's directory

// imcRoot makes a VMware root with empty guestinfo and puts the files of
// testdata/vmware/imc/<spec> (a .cfg file, or a directory) in
// /var/run/vmware-imc.
func imcRoot(t *testing.T, spec string) *stubVMX {
	t.Helper()
	s := newStubVMX(t, ToolRPCTool)
	dir := sysroot.Root(s.root).Path(iMCDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "testdata", "vmware", "imc", spec)
	if strings.HasSuffix(spec, ".cfg") {
		copyFile(t, src, filepath.Join(dir, iMCSpecFile))
		return s
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
	}
	return s
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// jsonEqual compares a JSON document with the JSON text want.
func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s =\n%s\nwant\n%s", what, got, want)
	}
}

func TestReadVMwareIMC(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		host, id   string
		defaulted  bool
		network    string // v2 JSON; "" for none
		vendor     string // vendor-data YAML after "#cloud-config"; "" for none
		imc        IMCSpec
		warnings   []string // each a substring of one warning, in order
		nWarnings  int
		userData   string
		transports []string
	}{
		{
			spec: "dhcp-2nic.cfg", host: "web01.corp.example.com", id: "4213abcd-1234-5678-9abc-def012345678", defaulted: true,
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:10:01"},"dhcp4":true,"nameservers":{"search":["corp.example.com"]}},
				"nic2":{"match":{"macaddress":"00:50:56:9a:10:02"},"dhcp4":true,"nameservers":{"search":["corp.example.com"]}}}}`,
			vendor: "timezone: Europe/Berlin\nchpasswd: {expire: false, users: [{name: root, password: r00t-s3cret, type: text}]}",
			imc:    IMCSpec{Kind: "traditional", Password: true, NICs: 2},
		},
		{
			spec: "dhcp-2nic-instance-id.cfg", host: "web01.corp.example.com", id: "4213f00d-aaaa-bbbb-cccc-0123456789ab",
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:10:01"},"dhcp4":true,"nameservers":{"search":["corp.example.com"]}},
				"nic2":{"match":{"macaddress":"00:50:56:9a:10:02"},"dhcp4":true,"nameservers":{"search":["corp.example.com"]}}}}`,
			vendor: "timezone: Europe/Berlin\nchpasswd: {expire: false, users: [{name: root, password: r00t-s3cret, type: text}]}",
			imc:    IMCSpec{Kind: "traditional", MarkerID: "7d3f0c2a-5b1e-4c6d-9e8f-0a1b2c3d4e5f", PostGCStatus: true, Password: true, NICs: 2},
		},
		{
			spec: "static-2nic.cfg", host: "db01.corp.example.com", id: "4213abcd-1234-5678-9abc-def012345678", defaulted: true,
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:20:01"},"dhcp4":false,"dhcp6":false,
					"addresses":["192.0.2.10/24","2001:db8:20::10/64"],
					"routes":[{"to":"0.0.0.0/0","via":"192.0.2.1"},{"to":"::/0","via":"2001:db8:20::1"}],
					"nameservers":{"addresses":["192.0.2.53","2001:db8:20::53"],"search":["corp.example.com","example.com"]}},
				"nic2":{"match":{"macaddress":"00:50:56:9a:20:02"},"dhcp4":false,
					"addresses":["198.51.100.20/16"],
					"nameservers":{"addresses":["192.0.2.53","2001:db8:20::53"],"search":["corp.example.com","example.com"]}}}}`,
			vendor: "timezone: America/Argentina/Buenos_Aires",
			imc:    IMCSpec{Kind: "traditional", MarkerID: "1700000001", NICs: 2},
		},
		{
			spec: "static-primary.cfg", host: "app01", id: "app01-clone-7",
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:30:01"},"dhcp4":false,"addresses":["10.0.1.10/24"],
					"nameservers":{"addresses":["10.0.2.53"]}},
				"nic2":{"match":{"macaddress":"00:50:56:9a:30:02"},"dhcp4":false,"dhcp6":false,
					"addresses":["10.0.2.10/24","2001:db8:30::10/64","2001:db8:31::10/64"],
					"routes":[{"to":"0.0.0.0/0","via":"10.0.2.1"},{"to":"::/0","via":"2001:db8:30::1"}],
					"nameservers":{"addresses":["10.0.2.53"]}}}}`,
			imc: IMCSpec{Kind: "traditional", NICs: 2},
		},
		{
			spec: "ipv4-disabled.cfg", host: "v6only", id: "4213abcd-1234-5678-9abc-def012345678", defaulted: true,
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:40:01"},"dhcp4":false,"dhcp6":false,
					"addresses":["2001:db8:40::10/64"],"routes":[{"to":"::/0","via":"2001:db8:40::1"}],
					"nameservers":{"addresses":["2001:db8:40::53"]}}}}`,
			imc: IMCSpec{Kind: "traditional", NICs: 1},
		},
		{
			spec: "bad-nics.cfg", id: "4213abcd-1234-5678-9abc-def012345678", defaulted: true,
			network: `{"version":2,"ethernets":{
				"nic1":{"match":{"macaddress":"00:50:56:9a:50:01"},"dhcp4":false,"addresses":["192.0.2.50/24"],
					"routes":[{"to":"0.0.0.0/0","via":"192.0.2.1"}],
					"nameservers":{"addresses":["192.0.2.53"],"search":["ok.example.com"]}}}}`,
			imc: IMCSpec{Kind: "traditional", NICs: 1, NICsDropped: 5},
			warnings: []string{
				"cust.cfg MISC MARKER-ID dropped: not a marker ID",
				"cust.cfg MISC POST-GC-STATUS dropped: want yes or no",
				"cust.cfg MISC INSTANCE-ID dropped: instance ID has a \"/\"",
				"cust.cfg NETWORK HOSTNAME dropped: label 1 is not a host name label",
				"cust.cfg DATETIME TIMEZONE dropped: not a time zone name",
				"cust.cfg PASSWORD RESET dropped: want yes or no",
				"cust.cfg PASSWORD -PASS dropped: not base64",
				"cust.cfg [NIC2] dropped, that NIC is left alone: MACADDR is not a MAC address",
				"cust.cfg [NIC3] dropped, that NIC is left alone: BOOTPROTO is static and IPADDR is not an IPv4 address",
				"cust.cfg [NIC4] dropped, that NIC is left alone: NETMASK is not a contiguous netmask",
				"cust.cfg [NIC5] dropped, that NIC is left alone: key BOOTPROTO given again on line 34",
				"cust.cfg NIC-CONFIG NICS item 6 dropped: not a section name, or named twice",
				"cust.cfg DNS NAMESERVER|3 dropped: not an IP address",
				"cust.cfg DNS NAMESERVER|x dropped: the index is not a number",
				"cust.cfg DNS SUFFIX|2 dropped: label 1 is not a host name label",
			},
			nWarnings: 15,
		},
		{
			spec: "cloudinit", host: "ci-kind.example.com", id: "ci-kind-0001",
			network: `{"version":2,"ethernets":{"nics":{"match":{"macaddress":"00:50:56:9a:60:01"},
				"addresses":["192.0.2.60/24"],"routes":[{"to":"0.0.0.0/0","via":"192.0.2.1"}],
				"nameservers":{"addresses":["192.0.2.53"]}}}}`,
			userData: "#cloud-config\npackages: [htop]\n",
			imc:      IMCSpec{Kind: "cloud-init", MarkerID: "5a0c2f3e-0000-4000-8000-00000000c1d1", PostGCStatus: true},
			transports: []string{"/var/run/vmware-imc/cust.cfg", "/var/run/vmware-imc/cloud-init-metadata.yaml",
				"/var/run/vmware-imc/cloud-init-userdata.yaml"},
		},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s := imcRoot(t, tc.spec)
			var lb logBuffer
			o := s.options()
			o.Logger = lb.logger()
			md, err := readVMware(context.Background(), o)
			if err != nil {
				t.Fatalf("readVMware: %v", err)
			}
			if md.Source != SourceVMware || md.Origin.Transport != transportIMC {
				t.Errorf("source %q transport %q", md.Source, md.Origin.Transport)
			}
			if tc.transports != nil && !slices.Equal(md.Origin.Items, tc.transports) {
				t.Errorf("items %q, want %q", md.Origin.Items, tc.transports)
			}
			if md.Hostname != tc.host || md.InstanceID != tc.id || md.InstanceIDDefaulted != tc.defaulted {
				t.Errorf("hostname %q, instance ID %q (defaulted %v); want %q, %q (%v)", md.Hostname, md.InstanceID, md.InstanceIDDefaulted, tc.host, tc.id, tc.defaulted)
			}
			if md.MachineID != "4213abcd-1234-5678-9abc-def012345678" {
				t.Errorf("machine ID %q", md.MachineID)
			}
			if tc.network == "" {
				if md.NetworkConfigRaw != nil || md.Network != nil {
					t.Errorf("network %s, want none", md.NetworkConfigRaw)
				}
			} else {
				jsonEqual(t, "network", md.NetworkConfigRaw, tc.network)
				if md.Network == nil {
					t.Fatal("network config not parsed")
				}
			}
			if tc.vendor == "" {
				if md.VendorData != nil {
					t.Errorf("vendor-data %q, want none", md.VendorData)
				}
			} else {
				if !strings.HasPrefix(string(md.VendorData), "#cloud-config\n") {
					t.Errorf("vendor-data %q is not cloud-config", md.VendorData)
				}
				var got, want any
				if err := yaml.Unmarshal(md.VendorData, &got); err != nil {
					t.Fatal(err)
				}
				if err := yaml.Unmarshal([]byte(tc.vendor), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("vendor-data\n%s\nwant\n%s", md.VendorData, tc.vendor)
				}
			}
			if string(md.UserData) != tc.userData {
				t.Errorf("user-data %q, want %q", md.UserData, tc.userData)
			}
			if md.VMwareIMC == nil {
				t.Fatal("no IMC")
			}
			got := *md.VMwareIMC
			got.cloudConfig = nil
			if got.keep == nil {
				t.Error("nothing to keep of a spec read from /run")
			}
			got.keep = nil
			if !reflect.DeepEqual(got, tc.imc) {
				t.Errorf("IMC %+v, want %+v", got, tc.imc)
			}
			if tc.nWarnings != len(md.Warnings) {
				t.Errorf("%d warnings, want %d:\n%s", len(md.Warnings), tc.nWarnings, strings.Join(md.Warnings, "\n"))
			}
			for _, w := range tc.warnings {
				if !slices.ContainsFunc(md.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning %q in:\n%s", w, strings.Join(md.Warnings, "\n"))
				}
			}
			// The spec's values never reach a message, the password least
			// of all.
			log := lb.String() + strings.Join(md.Warnings, "\n")
			for _, secret := range []string{"r00t-s3cret", "cjAwdC1zM2NyZXQK", "bad_host!name", "$(reboot)", "../escape", "192.0.2.300", "etc/shadow", "bm90IGJhc2U2NA"} {
				if strings.Contains(log, secret) {
					t.Errorf("%q reached the log or a warning:\n%s", secret, log)
				}
			}
			if err := checkUsable(md); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestReadVMwareIMCRefused(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"cloudinit-missing", "/var/run/vmware-imc/absent-metadata.yaml: bad VMware customization spec"},
		{"cloudinit-escape", "[CLOUDINIT] METADATA does not name a file in the spec's directory"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			md, err := imcRoot(t, tc.spec).read()
			if err == nil || !errors.Is(err, ErrBadIMCSpec) || errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("readVMware = %v, %v; want an error with %q", md, err, tc.want)
			}
			if strings.Contains(err.Error(), "shadow") {
				t.Errorf("the error quotes the spec: %v", err)
			}
		})
	}
}

// Guestinfo comes first, as in cloud-init: a spec is read only when
// guestinfo has none of metadata, userdata and vendordata; and a root
// with neither is no source, saying both.
func TestReadVMwareIMCPrecedence(t *testing.T) {
	s := imcRoot(t, "static-primary.cfg")
	s.set("userdata", "#cloud-config\n")
	md := s.mustRead()
	if md.Origin.Transport != ToolRPCTool || md.VMwareIMC != nil {
		t.Errorf("transport %q, IMC %+v: guestinfo must win", md.Origin.Transport, md.VMwareIMC)
	}

	empty := newStubVMX(t, ToolRPCTool)
	_, err := empty.read()
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "all empty, and there is no customization spec: no /var/run/vmware-imc/cust.cfg (and VMware Tools' deployPkg plugin is not installed)") {
		t.Errorf("readVMware = %v", err)
	}

	// No guestinfo tool at all: the spec is still read (Tools left it).
	notools := imcRoot(t, "static-primary.cfg")
	o := notools.options()
	o.VMware.runner = vmtools.Exec{Path: t.TempDir()}
	md, err = readVMware(context.Background(), o)
	if err != nil || md.InstanceID != "app01-clone-7" {
		t.Errorf("without tools: %v, %v", md, err)
	}
}

// The spec is read inside the root and never through a link: cust.cfg or
// a file it names that is a symbolic link is refused.
func TestReadVMwareIMCLinks(t *testing.T) {
	s := imcRoot(t, "cloudinit")
	dir := sysroot.Root(s.root).Path(iMCDir)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("instance-id: stolen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "cloud-init-metadata.yaml")
	os.Remove(md)
	if err := os.Symlink(secret, md); err != nil {
		t.Fatal(err)
	}
	if _, err := s.read(); err == nil || !errors.Is(err, ErrBadIMCSpec) {
		t.Errorf("meta-data through a link: %v", err)
	}

	s = imcRoot(t, "static-primary.cfg")
	spec := filepath.Join(sysroot.Root(s.root).Path(iMCDir), iMCSpecFile)
	os.Rename(spec, spec+".real")
	if err := os.Symlink(iMCSpecFile+".real", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.read(); err == nil || errors.Is(err, ErrNoSource) {
		t.Errorf("cust.cfg through a link: %v", err)
	}
}

// The bounds: a spec over maxIMCSpec, or with too many sections or keys,
// is refused whole; a value over maxIMCValue drops its key (here a NIC's,
// which drops the NIC); NICs beyond maxIMCNICs are dropped.
func TestParseIMCBounds(t *testing.T) {
	read := func(string, int) ([]byte, error) { return nil, os.ErrNotExist }
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"too large", "[MISC]\n" + strings.Repeat("#\n", maxIMCSpec), "more than 65536"},
		{"too many sections", strings.Repeat("[S]\n", 1) + func() string {
			var b strings.Builder
			for i := range maxIMCSections + 1 {
				b.WriteString("[S" + strings.Repeat("x", i) + "]\n")
			}
			return b.String()
		}(), "more than 64 sections"},
		{"too many keys", "[MISC]\n" + func() string {
			var b strings.Builder
			for i := range maxIMCKeys + 1 {
				b.WriteString("K" + strings.Repeat("x", i%50) + string(rune('a'+i/50)) + " = 1\n")
			}
			return b.String()
		}(), "more than 1024 keys"},
		{"not UTF-8", "[NETWORK]\nHOSTNAME = \xff\n", "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseIMC([]byte(tc.spec), read, nil)
			if !errors.Is(err, ErrBadIMCSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseIMC = %v, want %q", err, tc.want)
			}
		})
	}

	var b strings.Builder
	b.WriteString("[NIC-CONFIG]\nNICS = ")
	for i := range maxIMCNICs + 2 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("NIC" + string(rune('A'+i)))
	}
	b.WriteString("\n")
	for i := range maxIMCNICs + 2 {
		b.WriteString("[NIC" + string(rune('A'+i)) + "]\nMACADDR = 00:50:56:00:00:" + strings.ToLower(string("0123456789ABCDEFGH"[i])) + "0\n")
		if i == 0 {
			b.WriteString("IPADDR = " + strings.Repeat("1", maxIMCValue+1) + "\n")
		}
	}
	md, err := parseIMC([]byte(b.String()), read, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md.VMwareIMC.NICs != maxIMCNICs-1 || md.VMwareIMC.NICsDropped != 1 {
		t.Errorf("NICs %d, dropped %d; warnings:\n%s", md.VMwareIMC.NICs, md.VMwareIMC.NICsDropped, strings.Join(md.Warnings, "\n"))
	}
	if !slices.ContainsFunc(md.Warnings, func(s string) bool { return strings.Contains(s, "beyond the first 16") }) {
		t.Errorf("no warning about the NICs beyond the bound:\n%s", strings.Join(md.Warnings, "\n"))
	}
}

// A password is handed on only as cloud-config, and RESET = yes expires
// it as cloud-init's reset does; a password that is not one is dropped
// without a word of it.
func TestParseIMCPassword(t *testing.T) {
	read := func(string, int) ([]byte, error) { return nil, os.ErrNotExist }
	for _, tc := range []struct {
		name, pass, reset string
		want              map[string]any
		warn              string
	}{
		{"reset", "s3cr3t pass\n", "yes", map[string]any{"expire": true, "users": []any{map[string]any{"name": "root", "password": "s3cr3t pass", "type": "text"}}}, ""},
		{"control character", "a\x1bb", "no", nil, "a password with a control character"},
		{"too long", strings.Repeat("p", imcMaxPass+1), "no", nil, "a password longer than 256 bytes"},
		{"not UTF-8", "p\xffq", "no", nil, "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := base64.StdEncoding.EncodeToString([]byte(tc.pass))
			md, err := parseIMC([]byte("[PASSWORD]\n-PASS = "+enc+"\nRESET = "+tc.reset+"\n"), read, nil)
			if err != nil {
				t.Fatal(err)
			}
			var cc map[string]any
			if md.VendorData != nil {
				if err := yaml.Unmarshal(md.VendorData, &cc); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(cc["chpasswd"], anyOrNil(tc.want)) {
				t.Errorf("chpasswd %#v, want %#v", cc["chpasswd"], tc.want)
			}
			if tc.warn != "" && !slices.ContainsFunc(md.Warnings, func(s string) bool { return strings.Contains(s, tc.warn) }) {
				t.Errorf("no warning %q in %q", tc.warn, md.Warnings)
			}
			if md.VMwareIMC.Password != (tc.want != nil) {
				t.Errorf("Password = %v", md.VMwareIMC.Password)
			}
			for _, w := range md.Warnings {
				if strings.Contains(w, enc) || (len(tc.pass) > 3 && strings.Contains(w, tc.pass[:3])) {
					t.Errorf("warning quotes the password: %q", w)
				}
			}
		})
	}
}

func anyOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// The INI reading: "=" or ":" ends a key, comments, CRLF lines, a key
// before any section, a continuation line, a section given twice.
func TestParseIMCINI(t *testing.T) {
	spec := "ORPHAN = 1\r\n[NETWORK]\r\nHOSTNAME: h1\r\n  continued\r\nDOMAINNAME = example.org\r\n; comment\r\n[MISC]\r\nINSTANCE-ID = i-9\r\n[MISC]\r\nINSTANCE-ID = i-10\r\nnot a key line\r\n"
	md, err := parseIMC([]byte(spec), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "i-9" {
		t.Errorf("instance ID %q, want the first section's", md.InstanceID)
	}
	if md.Hostname != "" {
		t.Errorf("hostname %q: a key with a continuation line must be dropped", md.Hostname)
	}
	for _, w := range []string{"line 1 dropped: before any section", "key HOSTNAME continues on line 4", "section MISC given again"} {
		if !slices.ContainsFunc(md.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("no warning %q in:\n%s", w, strings.Join(md.Warnings, "\n"))
		}
	}
}

// FuzzParseIMC: any spec is read without a panic into Metadata every
// writer accepts, within the bounds, and no warning quotes a value of it.
func FuzzParseIMC(f *testing.F) {
	specs, _ := filepath.Glob(filepath.Join("..", "testdata", "vmware", "imc", "*.cfg"))
	more, _ := filepath.Glob(filepath.Join("..", "testdata", "vmware", "imc", "*", iMCSpecFile))
	for _, p := range append(specs, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte("instance-id: x\nnetwork: {version: 2, ethernets: {e: {dhcp4: true}}}\n"))
	}
	f.Add([]byte("[NIC-CONFIG]\nNICS=A\n[A]\nMACADDR=00:11:22:33:44:55\nBOOTPROTO=static\nIPADDR=1.2.3.4\nIPv6ADDR|1=::1\n"), []byte{})
	f.Fuzz(func(t *testing.T, spec, doc []byte) {
		read := func(name string, limit int) ([]byte, error) {
			if len(doc) > limit {
				return nil, ErrBadIMCSpec
			}
			return doc, nil
		}
		md, err := parseIMC(spec, read, nil)
		if err != nil {
			if !errors.Is(err, ErrBadIMCSpec) && !strings.Contains(err.Error(), "meta-data") {
				t.Fatalf("error %v does not wrap ErrBadIMCSpec", err)
			}
			return
		}
		if err := checkUsable(md); err != nil {
			t.Fatal(err)
		}
		if md.VMwareIMC.NICs > maxIMCNICs {
			t.Fatalf("%d NICs", md.VMwareIMC.NICs)
		}
		if md.VMwareIMC.Kind == imcKindTrad && md.NetworkConfigRaw != nil && md.Network == nil {
			t.Fatal("raw network without a parsed one")
		}
		ini, _ := parseIMCINI(spec)
		for _, sec := range ini.sections {
			for _, v := range sec.keys {
				if len(v) < 12 || plainNameRE.MatchString(v) {
					continue
				}
				for _, w := range md.Warnings {
					if strings.Contains(w, v) {
						t.Fatalf("warning %q quotes a value", w)
					}
				}
			}
		}
	})
}

// reportIMC sends one RPC, as one argument, and refuses anything but its
// own words before any tool runs.
func TestReportIMC(t *testing.T) {
	var got [][]string
	r := vmtools.RunnerFunc(func(_ context.Context, argv []string) (vmtools.Result, error) {
		got = append(got, argv)
		return vmtools.Result{}, nil
	})
	if err := reportIMC(context.Background(), r, iMCStateRunning, iMCEventNetworkFail, "journalctl -u seedkeeper-boot@network setup failed"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"vmware-rpctool", "deployPkg.update.state 4 101 journalctl -u seedkeeper-boot@network setup failed"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
	for _, bad := range []struct {
		state, code int
		msg         string
	}{{4, 0, "a; reboot"}, {4, 0, "line\nbreak"}, {4, 0, "$(x)"}, {3, 0, "ok"}, {4, -1, "ok"}, {5, 0, strings.Repeat("a", 201)}} {
		if err := reportIMC(context.Background(), r, bad.state, bad.code, bad.msg); err == nil {
			t.Errorf("reportIMC(%d, %d, %q) = nil", bad.state, bad.code, bad.msg)
		}
	}
	if len(got) != 1 {
		t.Errorf("a refused report ran the tool: %q", got[1:])
	}
	fail := vmtools.RunnerFunc(func(context.Context, []string) (vmtools.Result, error) {
		return vmtools.Result{ExitCode: 1, Stderr: []byte("Permission denied\n")}, nil
	})
	var te *vmtools.ToolError
	if err := reportIMC(context.Background(), fail, 5, 0, "x"); !errors.As(err, &te) || te.ExitCode != 1 {
		t.Errorf("a failing tool: %v", err)
	}
}

// With VMware Tools' deployPkg plugin installed, a spec that Tools is
// still writing is waited for, within IMCWait; without the plugin nothing
// is waited for.
func TestReadVMwareIMCWait(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	s := newStubVMX(t, ToolRPCTool)
	plugin := sysroot.Root(s.root).Path(deployPkgPlugin[0])
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := s.options()
	o.VMware.IMCWait = 300 * time.Millisecond
	_, err := readVMware(context.Background(), o)
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "after waiting 300ms for it (VMware Tools' deployPkg plugin is installed)") {
		t.Errorf("no spec: %v", err)
	}

	dir := sysroot.Root(s.root).Path(iMCDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond)
		copyFile(t, filepath.Join("..", "testdata", "vmware", "imc", "static-primary.cfg"), filepath.Join(dir, iMCSpecFile))
	}()
	o.VMware.IMCWait = time.Minute
	md, err := readVMware(context.Background(), o)
	<-done
	if err != nil || md.InstanceID != "app01-clone-7" || md.VMwareIMC.Waited == "" {
		t.Fatalf("spec written while waiting: %v, %v", md, err)
	}
	if w, _ := time.ParseDuration(md.VMwareIMC.Waited); w < imcPoll || w >= time.Minute {
		t.Errorf("waited %s: not one look after the first", md.VMwareIMC.Waited)
	}

	// A cancelled context ends the wait with its error.
	os.Remove(filepath.Join(dir, iMCSpecFile))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := readVMware(ctx, o); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
}

// VMwareOptions.IMCWait's doc says what its zero value waits.
func TestIMCWaitDefaultAsDocumented(t *testing.T) {
	if defaultIMCWait != 15*time.Second {
		t.Errorf("defaultIMCWait = %v; VMwareOptions.IMCWait says 15 seconds", defaultIMCWait)
	}
}

// When the bound ends while VMware Tools is deploying a package (its
// extraction directory is there), the wait goes on for it: here the
// bound ends before the first look, and the spec is read only because
// Tools is seen at work; without its directory the wait ends at the
// bound.
func TestWaitIMCWhileToolsDeploys(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	s := newStubVMX(t, ToolRPCTool)
	root := sysroot.Root(s.root)
	plugin := root.Path(deployPkgPlugin[0])
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := root.Path(iMCDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join("..", "testdata", "vmware", "imc", "static-primary.cfg"), filepath.Join(dir, iMCSpecFile))
	if _, err := waitIMC(context.Background(), root, time.Millisecond, discardLog()); !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "after waiting 1ms for it (") {
		t.Errorf("Tools not at work: %v", err)
	}
	for _, d := range []string{iMCDir, "/var/run"} {
		x := root.Path(d + "/.vmware-imgcust-dAbC123")
		if err := os.MkdirAll(x, 0o700); err != nil {
			t.Fatal(err)
		}
		md, err := waitIMC(context.Background(), root, time.Millisecond, discardLog())
		if err != nil || md.InstanceID != "app01-clone-7" || md.VMwareIMC.Waited == "" {
			t.Errorf("Tools at work in %s: %+v, %v", d, md, err)
		}
		os.Remove(x)
	}
}

package datasource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// The tool names the source reports in Origin.Transport are the ones
// vmtools runs.
func TestToolNamesAreVMtools(t *testing.T) {
	if ToolRPCTool != vmtools.RPCTool || ToolVMToolsd != vmtools.VMToolsd {
		t.Errorf("ToolRPCTool, ToolVMToolsd = %q, %q; vmtools runs %q, %q", ToolRPCTool, ToolVMToolsd, vmtools.RPCTool, vmtools.VMToolsd)
	}
}

func TestReadVMwareEncodings(t *testing.T) {
	const userdata = "#cloud-config\nhostname: vm1\nruncmd: [\"echo hi\"]\n"
	wrapped := b64(strings.Repeat(userdata, 4))
	var lines []string
	for len(wrapped) > 76 {
		lines = append(lines, wrapped[:76])
		wrapped = wrapped[76:]
	}
	lines = append(lines, wrapped)

	for _, tc := range []struct {
		name, enc, value, want string
		noEncoding             bool
	}{
		{name: "plain, no encoding key", value: userdata, want: strings.TrimRight(userdata, "\n"), noEncoding: true},
		{name: "base64", enc: "base64", value: b64(userdata), want: userdata},
		{name: "b64", enc: "b64", value: b64(userdata), want: userdata},
		{name: "gzip+base64", enc: "gzip+base64", value: gzb64(userdata), want: userdata},
		{name: "gz+b64", enc: "gz+b64", value: gzb64(userdata), want: userdata},
		{name: "base64 wrapped at 76 columns", enc: "base64", value: strings.Join(lines, "\n") + "\n", want: strings.Repeat(userdata, 4)},
		{name: "base64 without padding", enc: "b64", value: strings.TrimRight(b64("ab"), "="), want: "ab"},
		{name: "encoding with trailing whitespace", enc: "base64 \n", value: b64(userdata), want: userdata},
		{name: "unknown encoding is plain", enc: "BASE64", value: "aGk=", want: "aGk="},
		{name: "redacted encoding is plain", enc: "---", value: "plain text", want: "plain text"},
		{name: "one-space encoding is plain", enc: " ", value: "plain text  \n", want: "plain text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
			s.set("metadata", `{"instance-id": "i-1"}`)
			s.set("userdata", tc.value)
			if !tc.noEncoding {
				s.set("userdata.encoding", tc.enc)
			}
			md := s.mustRead()
			if string(md.UserData) != tc.want {
				t.Errorf("UserData = %q, want %q", md.UserData, tc.want)
			}
			if md.Origin.Transport != ToolRPCTool {
				t.Errorf("Transport = %q, want %q", md.Origin.Transport, ToolRPCTool)
			}
		})
	}
}

func TestReadVMwareAbsentKeys(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("userdata", b64("#cloud-config\n"))
	s.set("userdata.encoding", "base64")
	s.set("vendordata", "---\n")
	s.set("vendordata.encoding", "base64") // must not be read: vendordata is absent
	md := s.mustRead()

	want := []string{
		"vmware-rpctool|info-get guestinfo.metadata",
		"vmware-rpctool|info-get guestinfo.userdata",
		"vmware-rpctool|info-get guestinfo.userdata.encoding",
		"vmware-rpctool|info-get guestinfo.vendordata",
	}
	if got := s.calls(); !slices.Equal(got, want) {
		t.Errorf("tool calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if string(md.UserData) != "#cloud-config\n" || md.VendorData != nil {
		t.Errorf("UserData %q, VendorData %q", md.UserData, md.VendorData)
	}
	// No metadata: the instance ID is the DMI product_uuid, lower-cased.
	lower := strings.ToLower(stubProductUUID)
	if md.InstanceID != lower || !md.InstanceIDDefaulted || md.MachineID != lower {
		t.Errorf("InstanceID %q (defaulted %v), MachineID %q; want %q", md.InstanceID, md.InstanceIDDefaulted, md.MachineID, lower)
	}
	if want := []string{"guestinfo.userdata", "guestinfo.userdata.encoding"}; !slices.Equal(md.Origin.Items, want) {
		t.Errorf("Items = %q, want %q", md.Origin.Items, want)
	}
	if md.Source != SourceVMware || md.NetworkConfigRaw != nil || md.Network != nil || md.NetworkDriversSet {
		t.Errorf("unexpected metadata: %+v", md)
	}
}

func TestReadVMwareNoContent(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "---")
	s.set("userdata", "  \n\t\n")
	s.set("vendordata", "")
	_, err := s.read()
	if !errors.Is(err, ErrNoSource) {
		t.Fatalf("err = %v, want ErrNoSource", err)
	}
	if !strings.Contains(err.Error(), "all empty") {
		t.Errorf("err = %q, want it to say the keys are empty", err)
	}
}

func TestReadVMwareEmptyStdout(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata.noout", "")
	s.set("userdata", "data")
	var logs logBuffer
	opt := s.options()
	opt.Logger = logs.logger()
	md, err := readVMware(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if md.MetaData == nil || len(md.MetaData) != 0 || string(md.UserData) != "data" {
		t.Errorf("MetaData %v, UserData %q", md.MetaData, md.UserData)
	}
	if !strings.Contains(logs.String(), "printed nothing") || !strings.Contains(logs.String(), "guestinfo.metadata") {
		t.Errorf("empty stdout not logged:\n%s", logs.String())
	}
}

// Secure RPC (guest_rpc.rpci.auth.cmd.info-get) makes vmware-rpctool fail
// with "Permission denied"; only vmtoolsd can read (cloud-init #4436, #4444).
func TestReadVMwarePermissionDeniedFallsBackToVMToolsd(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.env = append(s.env, "GUESTINFO_FAIL_RPCTOOL=Permission denied")
	s.set("metadata", "instance-id: i-secure\n")
	s.set("userdata", gzb64("#cloud-config\n"))
	s.set("userdata.encoding", "gzip+base64")
	md := s.mustRead()

	if md.Origin.Transport != ToolVMToolsd || md.InstanceID != "i-secure" || string(md.UserData) != "#cloud-config\n" {
		t.Errorf("Transport %q, InstanceID %q, UserData %q", md.Origin.Transport, md.InstanceID, md.UserData)
	}
	want := []string{
		"vmware-rpctool|info-get guestinfo.metadata",
		"vmtoolsd|--cmd|info-get guestinfo.metadata",
		"vmtoolsd|--cmd|info-get guestinfo.metadata.encoding",
		"vmtoolsd|--cmd|info-get guestinfo.userdata",
		"vmtoolsd|--cmd|info-get guestinfo.userdata.encoding",
		"vmtoolsd|--cmd|info-get guestinfo.vendordata",
	}
	if got := s.calls(); !slices.Equal(got, want) {
		t.Errorf("tool calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A failure on a later key restarts the whole query with vmtoolsd.
func TestReadVMwareFailureMidQueryRestarts(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("metadata", "instance-id: i-1\n")
	s.set("userdata", "ud")
	s.set("userdata.fail-vmware-rpctool", "Permission denied\n")
	md := s.mustRead()
	if md.Origin.Transport != ToolVMToolsd || string(md.UserData) != "ud" {
		t.Errorf("Transport %q, UserData %q", md.Origin.Transport, md.UserData)
	}
	calls := s.calls()
	i := slices.Index(calls, "vmware-rpctool|info-get guestinfo.userdata")
	if i < 0 || len(calls) <= i+1 || calls[i+1] != "vmtoolsd|--cmd|info-get guestinfo.metadata" {
		t.Errorf("the query did not restart from guestinfo.metadata with vmtoolsd:\n%s", strings.Join(calls, "\n"))
	}
	for _, c := range calls[i+1:] {
		if !strings.HasPrefix(c, "vmtoolsd|") {
			t.Errorf("after the fallback, %q", c)
		}
	}
}

func TestReadVMwareOnlyVMToolsd(t *testing.T) {
	s := newStubVMX(t, ToolVMToolsd)
	s.set("metadata", `{"instance-id":"i-2","local-hostname":"h2"}`)
	md := s.mustRead()
	if md.Origin.Transport != ToolVMToolsd || md.InstanceID != "i-2" || md.Hostname != "h2" {
		t.Errorf("Transport %q, InstanceID %q, Hostname %q", md.Origin.Transport, md.InstanceID, md.Hostname)
	}
}

func TestReadVMwareNoTools(t *testing.T) {
	s := newStubVMX(t)
	s.set("metadata", "instance-id: i-1\n")
	_, err := s.read()
	if !errors.Is(err, ErrNoSource) || !errors.Is(err, ErrNoVMwareTools) {
		t.Fatalf("err = %v, want ErrNoSource and ErrNoVMwareTools", err)
	}
	for _, w := range []string{"vmware-rpctool", "vmtoolsd", "open-vm-tools"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q does not mention %q", err, w)
		}
	}
}

func TestReadVMwareBothToolsFail(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.env = append(s.env,
		"GUESTINFO_FAIL_RPCTOOL=Failed sending message to VMware.",
		"GUESTINFO_FAIL_VMTOOLSD=Permission denied")
	s.set("metadata", "instance-id: i-1\n")
	_, err := s.read()
	if err == nil || errors.Is(err, ErrNoSource) {
		t.Fatalf("err = %v, want a tool failure", err)
	}
	var te *vmtools.ToolError
	if !errors.As(err, &te) || te.ExitCode != 1 {
		t.Errorf("err %v is not a *vmtools.ToolError with exit 1", err)
	}
	for _, w := range []string{
		`vmware-rpctool "info-get guestinfo.metadata": exit status 1: Failed sending message to VMware.`,
		`vmtoolsd "info-get guestinfo.metadata": exit status 1: Permission denied`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q\ndoes not contain %q", err, w)
		}
	}
}

func TestReadVMwareRPCToolFailsVMToolsdMissing(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.env = append(s.env, "GUESTINFO_FAIL_RPCTOOL=Permission denied")
	_, err := s.read()
	if err == nil || errors.Is(err, ErrNoSource) {
		t.Fatalf("err = %v, want a tool failure", err)
	}
	for _, w := range []string{"vmware-rpctool", "Permission denied", "vmtoolsd is not installed"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q does not mention %q", err, w)
		}
	}
}

func TestReadVMwareToolTimeout(t *testing.T) {
	t.Parallel() // waits out real timers: overlaps the package's other waits
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("metadata", "instance-id: i-1\n")
	s.set("metadata.hang-vmware-rpctool", "")
	opt := s.options()
	r := s.runner()
	// Long enough for the stub vmtoolsd (a shell script) to answer on a
	// loaded machine: the hung rpctool costs the whole timeout either way.
	r.Timeout = 2 * time.Second
	opt.VMware.runner = r
	md, err := readVMware(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if md.Origin.Transport != ToolVMToolsd || md.InstanceID != "i-1" {
		t.Errorf("a hung vmware-rpctool did not fall back: Transport %q, InstanceID %q", md.Origin.Transport, md.InstanceID)
	}
}

func TestReadVMwareNotVMware(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.dmi("product_name", "Standard PC (Q35 + ICH9, 2009)\n")
	opt := s.options()
	opt.VMware.runner = noRunner(t)
	_, err := readVMware(context.Background(), opt)
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "Standard PC") {
		t.Errorf("err = %v, want ErrNoSource naming the product", err)
	}

	opt.Root = s.root + "/nonexistent"
	_, err = readVMware(context.Background(), opt)
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "product_name") {
		t.Errorf("err = %v, want ErrNoSource saying there is no product_name", err)
	}
}

func TestReadVMwareBadEncodedValues(t *testing.T) {
	for _, tc := range []struct {
		key, enc, value string
		want            []string
	}{
		{"userdata", "base64", "not*base64", []string{"guestinfo.userdata", "decoding base64", "bad base64"}},
		{"metadata", "gzip+base64", b64("not gzip"), []string{"guestinfo.metadata", "decoding gzip+base64", "bad gzip"}},
		{"vendordata", "gz+b64", "%%%", []string{"guestinfo.vendordata", "decoding gz+b64", "bad base64"}},
		{"userdata", "gzip+base64", gzb64("truncated")[:20], []string{"guestinfo.userdata", "gzip+base64", "bad gzip"}},
	} {
		t.Run(tc.key+"/"+tc.enc, func(t *testing.T) {
			s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
			s.set(tc.key, tc.value)
			s.set(tc.key+".encoding", tc.enc)
			_, err := s.read()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not mention %q", err, w)
				}
			}
			// A value that does not decode is not a tool failure.
			for _, c := range s.calls() {
				if strings.HasPrefix(c, "vmtoolsd") {
					t.Errorf("fell back to vmtoolsd on a decoding error: %q", c)
				}
			}
		})
	}
}

func TestReadVMwareMetadataDocuments(t *testing.T) {
	want := func(t *testing.T, md *Metadata) {
		t.Helper()
		if md.InstanceID != "cloud-vm-0042" || md.InstanceIDDefaulted || md.Hostname != "cloud-vm" {
			t.Errorf("InstanceID %q (defaulted %v), Hostname %q", md.InstanceID, md.InstanceIDDefaulted, md.Hostname)
		}
		if md.MachineID != strings.ToLower(stubProductUUID) {
			t.Errorf("MachineID = %q", md.MachineID)
		}
		if len(md.PublicKeys) != 2 || !strings.HasPrefix(md.PublicKeys[0], "ssh-ed25519 ") || !strings.HasSuffix(md.PublicKeys[1], "two@example") {
			t.Errorf("PublicKeys = %q", md.PublicKeys)
		}
		if !md.NetworkDriversSet || !slices.Equal(md.NetworkDrivers, []string{"vmxnet3", "e1000e"}) {
			t.Errorf("NetworkDrivers = %q (set %v)", md.NetworkDrivers, md.NetworkDriversSet)
		}
		if md.Network == nil || len(md.Network.Interfaces) != 1 || md.Network.Interfaces[0].MAC != "00:50:56:aa:bb:01" {
			t.Errorf("Network = %+v", md.Network)
		}
	}
	for _, name := range []string{"metadata.yaml", "metadata.json"} {
		doc, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, enc := range []string{"", "base64", "gzip+base64"} {
			t.Run(name+"/"+enc, func(t *testing.T) {
				s := newStubVMX(t, ToolRPCTool)
				switch enc {
				case "":
					s.set("metadata", string(doc))
				case "base64":
					s.set("metadata", b64(string(doc)))
					s.set("metadata.encoding", enc)
				default:
					s.set("metadata", gzb64(string(doc)))
					s.set("metadata.encoding", enc)
				}
				want(t, s.mustRead())
			})
		}
	}
}

func TestVMwareMetaDataFields(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		check     func(t *testing.T, md *Metadata)
	}{
		{"numeric instance-id", "instance-id: 12345678901234567\n", func(t *testing.T, md *Metadata) {
			if md.InstanceID != "12345678901234567" {
				t.Errorf("InstanceID = %q", md.InstanceID)
			}
		}},
		{"numeric instance-id in JSON", `{"instance-id": 12345678901234567}`, func(t *testing.T, md *Metadata) {
			if md.InstanceID != "12345678901234567" {
				t.Errorf("InstanceID = %q", md.InstanceID)
			}
		}},
		{"public-keys list", "public-keys: ['ssh-rsa A a', ' ', 'ssh-ed25519 B b']\n", func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa A a", "ssh-ed25519 B b"}) {
				t.Errorf("PublicKeys = %q", md.PublicKeys)
			}
		}},
		{"public_keys dict of lists", "public_keys: {z: ['ssh-rsa Z'], a: 'ssh-rsa A', m: [ssh-rsa M1, '']}\n", func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa A", "ssh-rsa M1", "ssh-rsa Z"}) {
				t.Errorf("PublicKeys = %q", md.PublicKeys)
			}
		}},
		{"first key name wins", "public-keys: [ssh-rsa OTHER]\npublic_keys_data: ssh-rsa FIRST\n", func(t *testing.T, md *Metadata) {
			if !slices.Equal(md.PublicKeys, []string{"ssh-rsa FIRST"}) {
				t.Errorf("PublicKeys = %q", md.PublicKeys)
			}
		}},
		{"null document", "# nothing here\n", func(t *testing.T, md *Metadata) {
			if md.MetaData == nil || len(md.MetaData) != 0 || md.InstanceID != "" {
				t.Errorf("MetaData %v, InstanceID %q", md.MetaData, md.InstanceID)
			}
		}},
		{"no network key", "instance-id: x\n", func(t *testing.T, md *Metadata) {
			if md.NetworkConfigRaw != nil || md.Network != nil {
				t.Errorf("NetworkConfigRaw %q, Network %v", md.NetworkConfigRaw, md.Network)
			}
		}},
		{"empty network string", "network: '---'\n", func(t *testing.T, md *Metadata) {
			if md.NetworkConfigRaw != nil {
				t.Errorf("NetworkConfigRaw %q", md.NetworkConfigRaw)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := &Metadata{}
			if err := applyVMwareMetaData(md, []byte(tc.doc), discardLog()); err != nil {
				t.Fatal(err)
			}
			tc.check(t, md)
		})
	}
}

func TestVMwareMetaDataErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"[1, 2]", "document is a list, want a mapping"},
		{"just a string", "document is a string, want a mapping"},
		{"a: [unclosed", "not JSON or YAML"},
		{"{\"a\": 1", "not JSON or YAML"},
	} {
		err := applyVMwareMetaData(&Metadata{}, []byte(tc.doc), discardLog())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestVMwareMetaDataFieldDropped: one bad field is dropped with a warning
// naming it; the rest of the metadata is used.
func TestVMwareMetaDataFieldDropped(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"instance-id: [a, b]", "instance-id dropped: want a string, got a list"},
		{"instance-id: ..", "instance-id dropped: instance ID is \".\" or \"..\", not a directory name"},
		{"local-hostname: {a: b}", "local-hostname dropped: want a string, got a mapping"},
		{"public-keys: 42", "public-keys dropped: want a string, a list or a mapping, got a number"},
		{"public-keys: [ssh-rsa A, 1]", "public-keys[1] dropped: want a string, got a number"},
		{"public-keys: [\"ssh-rsa\\tA\"]", "public-keys[0] line 1: a TAB between fields was replaced by a space"},
		{"network: 42", "network dropped, leaving the network alone: want a mapping or an encoded string, got a number"},
		{"network: ab!c\nnetwork.encoding: base64\n", "network dropped, leaving the network alone: decoding base64: bad base64"},
		{"network: abc\nnetwork.encoding: [base64]\n", "network dropped, leaving the network alone: network.encoding: want a string, got a list"},
		{"network: {version: 7}", "network dropped, leaving the network alone: version: 7 is not a supported version (1 or 2)"},
	} {
		md := &Metadata{}
		err := applyVMwareMetaData(md, []byte("x-keep: 1\n"+tc.doc), discardLog())
		if err != nil {
			t.Errorf("%q: err = %v, want the field dropped", tc.doc, err)
			continue
		}
		if len(md.Warnings) != 1 || !strings.HasPrefix(md.Warnings[0], tc.want) {
			t.Errorf("%q: Warnings = %q, want %q", tc.doc, md.Warnings, tc.want)
		}
		if md.Network != nil || md.NetworkConfigRaw != nil {
			t.Errorf("%q: network kept", tc.doc)
		}
		if md.MetaData["x-keep"] != int64(1) {
			t.Errorf("%q: the rest was not read: %v", tc.doc, md.MetaData)
		}
	}
}

func TestReadVMwareMetadataErrorNamesKey(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "[1, 2]")
	_, err := s.read()
	if err == nil || !strings.Contains(err.Error(), "vmware: guestinfo.metadata: document is a list") {
		t.Errorf("err = %v", err)
	}
}

func TestReadVMwareNoIdentity(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	if err := os.Remove(sysroot.Root(s.root).Path("/sys/class/dmi/id/product_uuid")); err != nil {
		t.Fatal(err)
	}
	s.set("userdata", "ud")
	_, err := s.read()
	if err == nil || !strings.Contains(err.Error(), "no instance-id") || !strings.Contains(err.Error(), "product_uuid") {
		t.Errorf("err = %v", err)
	}

	s.set("metadata", "instance-id: i-9\n")
	md := s.mustRead()
	if md.InstanceID != "i-9" || md.MachineID != "" {
		t.Errorf("InstanceID %q, MachineID %q", md.InstanceID, md.MachineID)
	}
}

func TestReadVMwareNetwork(t *testing.T) {
	const v1 = "version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: '00:50:56:aa:bb:02'\n    subnets:\n      - type: dhcp4\n"
	for _, tc := range []struct {
		name, doc, wantRaw string
	}{
		{"mapping", "instance-id: i\nnetwork:\n  version: 2\n  ethernets:\n    e0:\n      match: {macaddress: '00:50:56:AA:BB:02'}\n      dhcp4: true\n",
			`{"ethernets":{"e0":{"dhcp4":true,"match":{"macaddress":"00:50:56:AA:BB:02"}}},"version":2}`},
		{"plain string", "instance-id: i\nnetwork: |\n" + indent(v1), v1},
		{"base64 string", "instance-id: i\nnetwork: " + b64(v1) + "\nnetwork.encoding: base64\n", v1},
		{"gzip+base64 string", "instance-id: i\nnetwork: " + gzb64(v1) + "\nnetwork.encoding: gzip+base64\n", v1},
		{"JSON with gz+b64", `{"instance-id": "i", "network": "` + gzb64(v1) + `", "network.encoding": "gz+b64"}`, v1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := &Metadata{}
			raw, err := vmwareNetworkRaw(mustDoc(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.wantRaw {
				t.Errorf("network document = %q, want %q", raw, tc.wantRaw)
			}
			if err := applyVMwareMetaData(md, []byte(tc.doc), discardLog()); err != nil {
				t.Fatal(err)
			}
			if string(md.NetworkConfigRaw) != tc.wantRaw {
				t.Errorf("NetworkConfigRaw = %q", md.NetworkConfigRaw)
			}
			if md.Network == nil || len(md.Network.Interfaces) != 1 || md.Network.Interfaces[0].MAC != "00:50:56:aa:bb:02" {
				t.Errorf("Network = %+v", md.Network)
			}
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

func mustDoc(t *testing.T, doc string) map[string]any {
	t.Helper()
	m, _, err := parseVMwareDoc([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseNetworkDrivers(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want []string
	}{
		{"list", []any{"vmxnet3", " e1000e ", "vmxnet3"}, []string{"vmxnet3", "e1000e"}},
		{"comma string", "virtio_net, e1000 ,mlx5_core", []string{"virtio_net", "e1000", "mlx5_core"}},
		{"one name", "ixgbevf", []string{"ixgbevf"}},
		{"empty list allows nothing", []any{}, []string{}},
		{"string slice", []string{"iavf"}, []string{"iavf"}},
	} {
		got, err := parseNetworkDrivers(tc.v)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: parseNetworkDrivers(%#v) = %q, %v; want %q", tc.name, tc.v, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, "null"},
		{"number", int64(3), "a number"},
		{"mapping", map[string]any{"a": "b"}, "a mapping"},
		{"empty string", "", "item 0: empty driver name"},
		{"trailing comma", "e1000,", "item 1: empty driver name"},
		{"space in name", "e1000 e1000e", "item 0: driver name has U+0020 at byte 6"},
		{"glob", "vmxnet*", "driver name has U+002A at byte 7"},
		{"upper case", "VMXNET3", "item 0: driver name has U+0056 at byte 1"},
		{"non-string item", []any{"e1000", true}, "item 1 is a boolean"},
		{"too long", strings.Repeat("x", 32), "driver name is 32 bytes long"},
	} {
		got, err := parseNetworkDrivers(tc.v)
		if !errors.Is(err, ErrBadNetworkDrivers) || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("%s: parseNetworkDrivers(%#v) = %q, %v; want ErrBadNetworkDrivers saying %q", tc.name, tc.v, got, err, tc.want)
		}
	}
}

// A malformed network-drivers value must leave an allowlist that allows
// nothing, and say why; a typo must never open the hotplug gate.
func TestReadVMwareNetworkDrivers(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		set       bool
		want      []string
		bad       bool
	}{
		{"absent", `{"instance-id":"i"}`, false, nil, false},
		{"list", `{"instance-id":"i","network-drivers":["vmxnet3"," e1000 "]}`, true, []string{"vmxnet3", "e1000"}, false},
		{"comma string", "instance-id: i\nnetwork-drivers: 'vmxnet3, e1000e'\n", true, []string{"vmxnet3", "e1000e"}, false},
		{"empty list", "instance-id: i\nnetwork-drivers: []\n", true, []string{}, false},
		{"null", "instance-id: i\nnetwork-drivers:\n", true, nil, true},
		{"number", "instance-id: i\nnetwork-drivers: 1\n", true, nil, true},
		{"typo: space instead of comma", "instance-id: i\nnetwork-drivers: vmxnet3 e1000\n", true, nil, true},
		{"mapping", "instance-id: i\nnetwork-drivers: {vmxnet3: true}\n", true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStubVMX(t, ToolRPCTool)
			s.set("metadata", tc.doc)
			var logs logBuffer
			opt := s.options()
			opt.Logger = logs.logger()
			md, err := readVMware(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if md.NetworkDriversSet != tc.set || !reflect.DeepEqual(md.NetworkDrivers, tc.want) {
				t.Errorf("NetworkDrivers = %#v (set %v), want %#v (set %v)", md.NetworkDrivers, md.NetworkDriversSet, tc.want, tc.set)
			}
			err = NetworkDriversError(md)
			if tc.bad != errors.Is(err, ErrBadNetworkDrivers) || tc.bad != (err != nil) {
				t.Errorf("NetworkDriversError = %v, want bad=%v", err, tc.bad)
			}
			if tc.bad && !strings.Contains(logs.String(), "hotplug will allow no driver") {
				t.Errorf("not logged:\n%s", logs.String())
			}
		})
	}
}

func TestReadVMwareRedact(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("metadata", "instance-id: i-1\nredact: [userdata, extra.key]\n")
	s.set("userdata", b64("secret"))
	s.set("userdata.encoding", "base64")
	opt := s.options()
	opt.VMware.Redact = true
	md, err := readVMware(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if string(md.UserData) != "secret" {
		t.Errorf("UserData = %q", md.UserData)
	}
	calls := s.calls()
	i := slices.IndexFunc(calls, func(c string) bool { return strings.Contains(c, "info-set") })
	if i < 0 {
		t.Fatalf("no info-set:\n%s", strings.Join(calls, "\n"))
	}
	want := []string{
		"vmware-rpctool|info-set guestinfo.metadata ---",
		"vmware-rpctool|info-set guestinfo.metadata.encoding  ",
		"vmware-rpctool|info-set guestinfo.userdata ---",
		"vmware-rpctool|info-set guestinfo.userdata.encoding  ",
		"vmware-rpctool|info-set guestinfo.extra.key ---",
		"vmware-rpctool|info-set guestinfo.extra.key.encoding  ",
	}
	if got := calls[i:]; !slices.Equal(got, want) {
		t.Errorf("redaction calls:\n%q\nwant:\n%q", got, want)
	}
	if s.get("userdata") != "---" || s.get("userdata.encoding") != " " {
		t.Errorf("VMX holds userdata %q, encoding %q", s.get("userdata"), s.get("userdata.encoding"))
	}

	// What is left reads as absent, as in cloud-init.
	_, err = s.read()
	if !errors.Is(err, ErrNoSource) {
		t.Errorf("after redaction: err = %v, want ErrNoSource", err)
	}
}

func TestReadVMwareRedactUsesTheReadingTool(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("vendordata", "vd")
	s.set("vendordata.fail-vmware-rpctool", "Permission denied")
	opt := s.options()
	opt.VMware.Redact = true
	if _, err := readVMware(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	calls := s.calls()
	want := []string{
		"vmtoolsd|--cmd|info-set guestinfo.vendordata ---",
		"vmtoolsd|--cmd|info-set guestinfo.vendordata.encoding  ",
	}
	if got := calls[len(calls)-2:]; !slices.Equal(got, want) {
		t.Errorf("redaction calls %q, want %q", got, want)
	}
}

func TestReadVMwareRedactOffByDefault(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "instance-id: i-1\nredact: userdata\ncleanup-guestinfo: [metadata]\n")
	s.set("userdata", "ud")
	var logs logBuffer
	opt := s.options()
	opt.Logger = logs.logger()
	if _, err := readVMware(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.calls() {
		if strings.Contains(c, "info-set") {
			t.Errorf("redaction off, but %q", c)
		}
	}
	if s.get("userdata") != "ud" {
		t.Errorf("userdata now %q", s.get("userdata"))
	}
	if !strings.Contains(logs.String(), "redaction is off") || !strings.Contains(logs.String(), "keys=userdata") {
		t.Errorf("the metadata's redact request is not logged:\n%s", logs.String())
	}
}

func TestReadVMwareRedactListLegacyAndBadNames(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "instance-id: i-1\ncleanup-guestinfo: ['userdata', 'bad key', 7]\n")
	opt := s.options()
	opt.VMware.Redact = true
	if _, err := readVMware(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, c := range s.calls() {
		if strings.Contains(c, "info-set") {
			sets = append(sets, c)
		}
	}
	want := []string{
		"vmware-rpctool|info-set guestinfo.metadata ---",
		"vmware-rpctool|info-set guestinfo.metadata.encoding  ",
		"vmware-rpctool|info-set guestinfo.userdata ---",
		"vmware-rpctool|info-set guestinfo.userdata.encoding  ",
	}
	if !slices.Equal(sets, want) {
		t.Errorf("info-set calls %q, want %q", sets, want)
	}
}

func TestReadVMwareRedactFailureIsLogged(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("userdata", "ud")
	// The stub refuses keys with a slash; a read-only VMX answers likewise.
	var logs logBuffer
	opt := s.options()
	opt.VMware.Redact = true
	opt.Logger = logs.logger()
	opt.VMware.runner = vmtools.RunnerFunc(func(ctx context.Context, argv []string) (vmtools.Result, error) {
		if strings.HasPrefix(argv[len(argv)-1], "info-set ") {
			return vmtools.Result{Stderr: []byte("Permission denied\n"), ExitCode: 1}, nil
		}
		return s.runner().Run(ctx, argv)
	})
	md, err := readVMware(context.Background(), opt)
	if err != nil || string(md.UserData) != "ud" {
		t.Fatalf("a failed redaction changed the read: %v", err)
	}
	if !strings.Contains(logs.String(), "redacting guestinfo key failed") || !strings.Contains(logs.String(), "Permission denied") {
		t.Errorf("failure not logged:\n%s", logs.String())
	}
}

// What the VM hands over is named by where it is and described, never
// quoted, in a log line or an error: a rejected key to redact, an
// unknown encoding, a metadata document that is not YAML.
func TestReadVMwareLogsNoOutsideValue(t *testing.T) {
	const secret = "SECRET-hunter2"
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "instance-id: i-1\nredact: [userdata, \""+secret+"/x\", 7]\n")
	s.set("userdata", "ud")
	s.set("userdata.encoding", secret)
	var logs logBuffer
	opt := s.options()
	opt.VMware.Redact = true
	opt.Logger = logs.logger()
	if _, err := readVMware(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, secret) {
		t.Errorf("a log line quotes the VM's text:\n%s", out)
	}
	for _, want := range []string{
		`not a guestinfo key name" item=2 got="a string of 16 bytes"`,
		`not a guestinfo key name" item=3 got="a number"`,
		"unknown guestinfo encoding",
		"encoding_bytes=14",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	// A YAML library error quotes the text (an anchor's name): it is
	// described.
	s.set("metadata", "instance-id: *"+secret+"\n")
	_, err := readVMware(context.Background(), opt)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "not JSON or YAML") {
		t.Errorf("err = %v, want one about the metadata that does not quote it", err)
	}

	// A key dropped for its size is named when it is a plain name,
	// else described.
	big := strings.Repeat("x", MaxMetaDataExpanded+1)
	got := boundMetaData("metadata", map[string]any{"plain-key": big, secret + " with a space": big})
	want := []string{
		fmt.Sprintf("metadata key (a name of 27 bytes) dropped: expands to more than %d bytes (YAML aliases?)", MaxMetaDataExpanded),
		fmt.Sprintf("metadata key plain-key dropped: expands to more than %d bytes (YAML aliases?)", MaxMetaDataExpanded),
	}
	if !slices.Equal(got, want) {
		t.Errorf("boundMetaData warnings = %q, want %q", got, want)
	}
}

func TestReadVMwareEnvvar(t *testing.T) {
	env := map[string]string{
		"VMX_GUESTINFO":                     "1",
		"VMX_GUESTINFO_METADATA":            b64("instance-id: env-1\nlocal-hostname: envhost\nredact: [userdata]\n"),
		"VMX_GUESTINFO_METADATA_ENCODING":   "base64",
		"VMX_GUESTINFO_USERDATA":            gzb64("#cloud-config\n"),
		"VMX_GUESTINFO_USERDATA_ENCODING":   "gz+b64",
		"VMX_GUESTINFO_VENDORDATA":          "---",
		"VMX_GUESTINFO_VENDORDATA_ENCODING": "base64",
	}
	s := newStubVMX(t)
	s.dmi("product_name", "KVM\n") // the envvar transport needs no VMware platform
	opt := Options{Root: s.root, VMware: VMwareOptions{
		runner: noRunner(t),
		Getenv: func(k string) string { return env[k] },
		Redact: true,
	}}
	md, err := readVMware(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if md.Origin.Transport != TransportEnvvar || md.InstanceID != "env-1" || md.Hostname != "envhost" ||
		string(md.UserData) != "#cloud-config\n" || md.VendorData != nil {
		t.Errorf("unexpected metadata %+v", md)
	}
	wantItems := []string{"VMX_GUESTINFO_METADATA", "VMX_GUESTINFO_METADATA_ENCODING", "VMX_GUESTINFO_USERDATA", "VMX_GUESTINFO_USERDATA_ENCODING"}
	if !slices.Equal(md.Origin.Items, wantItems) {
		t.Errorf("Items = %q, want %q", md.Origin.Items, wantItems)
	}

	// Without VMX_GUESTINFO the variables are not looked at.
	delete(env, "VMX_GUESTINFO")
	_, err = readVMware(context.Background(), opt)
	if !errors.Is(err, ErrNoSource) {
		t.Errorf("err = %v, want ErrNoSource", err)
	}

	env["VMX_GUESTINFO"] = "1"
	env["VMX_GUESTINFO_USERDATA"] = "@@@"
	_, err = readVMware(context.Background(), opt)
	if err == nil || !strings.Contains(err.Error(), "VMX_GUESTINFO_USERDATA: decoding gz+b64: bad base64") {
		t.Errorf("err = %v", err)
	}
}

func TestDetectVMware(t *testing.T) {
	s := newStubVMX(t)
	for _, tc := range []struct {
		product string
		want    bool
	}{
		{"VMware Virtual Platform\n", true},
		{"VMware7,1", true},
		{"vmware20,1", true},
		{"KVM", false},
		{"", false},
	} {
		s.dmi("product_name", tc.product)
		ok, why := foundVMware(s.root)
		if ok != tc.want || why == "" {
			t.Errorf("product %q: detectVMware = %v, %q", tc.product, ok, why)
		}
	}
	if ok, why := foundVMware(s.root + "/none"); ok || !strings.Contains(why, "product_name") {
		t.Errorf("no DMI: %v, %q", ok, why)
	}
	t.Setenv("VMX_GUESTINFO", "1")
	t.Setenv("VMX_GUESTINFO_USERDATA", "x")
	if ok, why := foundVMware(s.root + "/none"); !ok || !strings.Contains(why, "VMX_GUESTINFO_USERDATA") {
		t.Errorf("envvar transport: %v, %q", ok, why)
	}

	// The environment read through VMwareOptions.Getenv counts as the
	// reader counts it: VMX_GUESTINFO alone, with no value, is not the
	// envvar transport.
	env := map[string]string{"VMX_GUESTINFO": "1"}
	o := Options{Root: s.root + "/none", VMware: VMwareOptions{Getenv: func(k string) string { return env[k] }}}
	if d, err := detectVMware(context.Background(), o); err != nil || d.Found {
		t.Errorf("VMX_GUESTINFO without a value: %+v, %v; want not found", d, err)
	}
	env["VMX_GUESTINFO_METADATA"] = "instance-id: i\n"
	if d, err := detectVMware(context.Background(), o); err != nil || !d.Found || d.Reason != "VMX_GUESTINFO and VMX_GUESTINFO_METADATA are set" {
		t.Errorf("VMX_GUESTINFO with metadata: %+v, %v", d, err)
	}
}

func TestGuestinfoToolClassification(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    vmtools.Result
		runErr error
		want   string
		ok     bool
		err    string
	}{
		{name: "value", res: vmtools.Result{Stdout: []byte("v\n")}, want: "v", ok: true},
		{name: "value right-stripped", res: vmtools.Result{Stdout: []byte("v \t\r\n\n")}, want: "v", ok: true},
		{name: "no value, exit 1", res: vmtools.Result{Stderr: []byte("No value found\n"), ExitCode: 1}},
		{name: "no value, exit 0", res: vmtools.Result{Stderr: []byte("No value found")}},
		{name: "no value, CRLF", res: vmtools.Result{Stderr: []byte("No value found\r\n"), ExitCode: 1}},
		{name: "empty stdout", res: vmtools.Result{}},
		{name: "just a newline", res: vmtools.Result{Stdout: []byte("\n")}},
		{name: "---", res: vmtools.Result{Stdout: []byte("---\n")}},
		{name: "other stderr, exit 0", res: vmtools.Result{Stdout: []byte("v\n"), Stderr: []byte("warning\n")}, want: "v", ok: true},
		{name: "similar message", res: vmtools.Result{Stderr: []byte("No value found for key\n"), ExitCode: 1},
			err: `vmware-rpctool "info-get guestinfo.k": exit status 1: No value found for key`},
		{name: "exit 2, silent", res: vmtools.Result{ExitCode: 2}, err: "exit status 2: (nothing on stderr)"},
		{name: "not found", runErr: &exec.Error{Name: "vmware-rpctool", Err: exec.ErrNotFound}, err: "executable file not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := guestinfoTool{name: ToolRPCTool, log: discardLog(), r: vmtools.RunnerFunc(func(_ context.Context, argv []string) (vmtools.Result, error) {
				if !slices.Equal(argv, []string{"vmware-rpctool", "info-get guestinfo.k"}) {
					t.Errorf("argv = %q", argv)
				}
				return tc.res, tc.runErr
			})}
			v, ok, err := tool.get(context.Background(), "k", maxGuestinfoDecoded)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(v) != tc.want || ok != tc.ok {
				t.Errorf("get = %q, %v, %v; want %q, %v", v, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestReadVMwareContextCanceled(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	s.set("metadata", "instance-id: i\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opt := s.options()
	_, err := readVMware(ctx, opt)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	for _, c := range s.calls() {
		if strings.HasPrefix(c, "vmtoolsd") {
			t.Errorf("fell back after cancellation: %q", c)
		}
	}
}

func TestVMwareNetworkDisabledAndInvalid(t *testing.T) {
	md := &Metadata{}
	if err := applyVMwareMetaData(md, []byte("network: {config: disabled}\n"), discardLog()); err != nil {
		t.Fatal(err)
	}
	if md.Network != nil || string(md.NetworkConfigRaw) != `{"config":"disabled"}` {
		t.Errorf("disabled: Network %+v, NetworkConfigRaw %q", md.Network, md.NetworkConfigRaw)
	}

	// A top-level "network:" wrapper inside the value is accepted.
	doc := "network:\n  network:\n    version: 2\n    ethernets:\n      e0: {match: {macaddress: '00:50:56:00:00:01'}, dhcp4: true}\n"
	md = &Metadata{}
	if err := applyVMwareMetaData(md, []byte(doc), discardLog()); err != nil {
		t.Fatal(err)
	}
	if md.Network == nil || len(md.Network.Interfaces) != 1 {
		t.Errorf("wrapped: Network %+v", md.Network)
	}

	md = &Metadata{}
	err := applyVMwareMetaData(md, []byte("network: '"+b64("version: [")+"'\nnetwork.encoding: b64\n"), discardLog())
	if err != nil || md.Network != nil || len(md.Warnings) != 1 || !strings.HasPrefix(md.Warnings[0], "network dropped") {
		t.Errorf("bad encoded document: err = %v, warnings %q", err, md.Warnings)
	}
}

// BenchmarkReadVMwareStubs is a full read (three keys and their encodings,
// gzip+base64 user-data, YAML metadata with a network) through the stub
// tools: it is dominated by the cost of running the tools.
func BenchmarkReadVMwareStubs(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", "metadata.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	s := newStubVMX(b, ToolRPCTool, ToolVMToolsd)
	s.env = slices.DeleteFunc(s.env, func(e string) bool { return strings.HasPrefix(e, "GUESTINFO_LOG=") })
	s.set("metadata", string(doc))
	s.set("userdata", gzb64(strings.Repeat("#cloud-config\n", 100)))
	s.set("userdata.encoding", "gzip+base64")
	s.set("vendordata", b64("vd"))
	s.set("vendordata.encoding", "base64")
	opt := s.options()
	for b.Loop() {
		if _, err := readVMware(context.Background(), opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVMwareMetaData is the parsing alone.
func BenchmarkVMwareMetaData(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", "metadata.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := applyVMwareMetaData(&Metadata{}, doc, discardLog()); err != nil {
			b.Fatal(err)
		}
	}
}

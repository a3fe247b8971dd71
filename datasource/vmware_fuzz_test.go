package datasource

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

func FuzzDecodeGuestinfo(f *testing.F) {
	for _, enc := range []string{"", "base64", "b64", "gzip+base64", "gz+b64", "BASE64", " "} {
		f.Add(enc, "")
		f.Add(enc, "plain text")
		f.Add(enc, b64("#cloud-config\n"))
		f.Add(enc, gzb64("#cloud-config\n"))
		f.Add(enc, "aGk\n=")
		f.Add(enc, b64("\x1f\x8b\x08\x00"))
	}
	f.Fuzz(func(t *testing.T, enc, val string) {
		b, err := decodeGuestinfo(enc, []byte(val), maxGuestinfoDecoded)
		switch enc {
		case "base64", "b64":
			if err != nil {
				return
			}
			if len(b) > len(val) {
				t.Fatalf("%d bytes decoded from %d", len(b), len(val))
			}
			again, err := decodeGuestinfo(enc, []byte(base64.StdEncoding.EncodeToString(b)), maxGuestinfoDecoded)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoded value decodes to %q, %v; want %q", again, err, b)
			}
		case "gzip+base64", "gz+b64":
			if err == nil && len(b) > maxGuestinfoDecoded {
				t.Fatalf("%d bytes decoded, more than the limit", len(b))
			}
		default:
			if err != nil || string(b) != val {
				t.Fatalf("plain value changed: %q -> %q, %v", val, b, err)
			}
		}
	})
}

func FuzzVMwareMetaData(f *testing.F) {
	for _, name := range []string{"metadata.yaml", "metadata.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "vmware", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"---",
		"[1, 2]",
		"instance-id: 12345678901234567890123\n",
		"public-keys: {a: [x, 1]}\n",
		"network: " + gzb64("version: 1\nconfig: []\n") + "\nnetwork.encoding: gz+b64\n",
		"network: {version: 2, ethernets: {e: {match: {macaddress: '00:50:56:00:00:01'}, dhcp4: .inf}}}\n",
		"network-drivers: 'a,,b'\n",
		"network-drivers: [vmxnet3, ' e1000 ']\n",
		"{1: 2, [a]: b}\n",
		"redact: [userdata, 'a b']\n",
		`{"instance-id": 1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		md := &Metadata{}
		if err := applyVMwareMetaData(md, doc, discardLog()); err != nil {
			return
		}
		if md.MetaData == nil {
			t.Fatal("nil MetaData without an error")
		}
		if err := checkUsable(md); err != nil {
			t.Fatalf("reader handed on a field a writer refuses: %v", err)
		}
		if md.NetworkConfigRaw == nil && md.Network != nil {
			t.Fatal("Network without NetworkConfigRaw")
		}
		if md.NetworkDriversSet && (md.NetworkDrivers == nil) != (NetworkDriversError(md) != nil) {
			t.Fatalf("drivers %q but NetworkDriversError %v", md.NetworkDrivers, NetworkDriversError(md))
		}
		for _, d := range md.NetworkDrivers {
			if netcfg.CheckDriverName(d) != nil {
				t.Fatalf("bad driver name %q accepted", d)
			}
		}
		vmwareRedactList(md.MetaData, discardLog())
	})
}

package datasource

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// aliasBomb is YAML whose key names one 1 MiB string n times: a few
// hundred bytes of text beside the string, n MiB once encoded again.
func aliasBomb(key string, n int, indent string) string {
	var b strings.Builder
	b.WriteString("big: &big " + strings.Repeat("x", 1<<20) + "\n" + key + ":\n")
	for range n {
		b.WriteString(indent + "- *big\n")
	}
	return b.String()
}

func gzipBase64(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestVMwareNetworkAliasBomb: a small gzip+base64 metadata whose network
// mapping names one 1 MiB string a thousand times ran boot out of memory
// when the mapping was re-encoded as JSON.
func TestVMwareNetworkAliasBomb(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("instance-id: i-bomb\nnetwork:\n  version: 2\n  big: &big " + strings.Repeat("x", 1<<20) + "\n  ethernets:\n    e0:\n      dhcp4: true\n      list:\n")
	for range 1000 {
		doc.WriteString("      - *big\n")
	}
	enc := gzipBase64(t, doc.String())
	if len(enc) > 8<<10 {
		t.Fatalf("the encoded metadata is %d bytes; the point is that it is small", len(enc))
	}
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", enc)
	s.set("metadata.encoding", "gzip+base64")
	md, err := readVMware(context.Background(), s.options())
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "i-bomb" || md.Network != nil || md.NetworkConfigRaw != nil {
		t.Errorf("ID %q, network %v, raw %d bytes; want the ID read and the network dropped", md.InstanceID, md.Network, len(md.NetworkConfigRaw))
	}
	if len(md.Warnings) != 1 || !strings.Contains(md.Warnings[0], `metadata key network dropped`) || !strings.Contains(md.Warnings[0], "aliases are expanded") {
		t.Errorf("Warnings = %q", md.Warnings)
	}
	b, err := json.Marshal(md.MetaData)
	if err != nil || len(b) > 2*MaxMetaDataExpanded {
		t.Errorf("meta-data re-encodes to %d bytes (%v)", len(b), err)
	}
}

// TestNoCloudPublicKeysAliasBomb: public-keys given as aliases of one large
// string were written out in full into meta-data.
func TestNoCloudPublicKeysAliasBomb(t *testing.T) {
	r := newNCRoot(t)
	r.seed(noCloudSeedDir, map[string]string{
		"meta-data": "instance-id: i-1\nlocal-hostname: h\n" + aliasBomb("public-keys", 1000, ""),
		"user-data": "",
	})
	md, err := readNoCloud(context.Background(), r.opts())
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "i-1" || md.Hostname != "h" || len(md.PublicKeys) != 0 {
		t.Errorf("ID %q hostname %q, %d keys", md.InstanceID, md.Hostname, len(md.PublicKeys))
	}
	b, err := json.Marshal(md.MetaData)
	if err != nil || len(b) > 2*MaxMetaDataExpanded {
		t.Errorf("meta-data re-encodes to %d bytes (%v)", len(b), err)
	}
	if !strings.Contains(strings.Join(md.Warnings, "\n"), `meta-data key public-keys dropped: expands beyond the size limit`) {
		t.Errorf("Warnings = %q", md.Warnings)
	}
}

func TestSetPublicKeysBounds(t *testing.T) {
	md := &Metadata{}
	long := "ssh-rsa " + strings.Repeat("A", MaxPublicKey)
	keys := []string{"ssh-rsa\tA c", long, "ssh-rsa B\u2028c", "ssh-rsa C\x00", "  ", "ssh-ed25519 D"}
	md.setPublicKeys(nil, keys, nil)
	if want := []string{"ssh-rsa A c", "ssh-ed25519 D"}; strings.Join(md.PublicKeys, "|") != strings.Join(want, "|") {
		t.Errorf("keys %q, want %q", md.PublicKeys, want)
	}
	if len(md.Warnings) != 4 {
		t.Errorf("Warnings = %q, want 4", md.Warnings)
	}
	for _, w := range md.Warnings {
		if strings.Contains(w, "AAAA") || strings.Contains(w, "ssh-rsa") {
			t.Errorf("warning quotes the key: %q", w)
		}
	}
	many := make([]string, 0, 40)
	for i := range 40 {
		many = append(many, fmt.Sprintf("ssh-rsa %s %d", strings.Repeat("K", 8<<10), i))
	}
	md = &Metadata{}
	md.setPublicKeys(nil, many, nil)
	total := 0
	for _, k := range md.PublicKeys {
		total += len(k)
	}
	if total > MaxPublicKeys || len(md.PublicKeys) == 0 || len(md.Warnings) != 40-len(md.PublicKeys) {
		t.Errorf("%d keys of %d bytes kept, %d warnings", len(md.PublicKeys), total, len(md.Warnings))
	}
}

func TestCheckInstanceID(t *testing.T) {
	for _, id := range []string{"i-1234", "iid-local01", "4a1b2c3d-0000-1111-2222-333344445555", "a.b", "...", " padded ", strings.Repeat("x", 255)} {
		if err := CheckInstanceID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "/", "a\x00b", "a\nb", "a\tb", "a\u2028", "a\u0085", "a\x1c", strings.Repeat("x", 256), "\xff"} {
		err := CheckInstanceID(id)
		if err == nil {
			t.Errorf("%q accepted", id)
			continue
		}
		if len(id) > 3 && strings.Contains(err.Error(), id) {
			t.Errorf("%q: error quotes the ID: %v", id, err)
		}
	}
}

func TestBoundMetaData(t *testing.T) {
	m := map[string]any{"a": strings.Repeat("x", MaxMetaDataExpanded/2), "b": strings.Repeat("y", MaxMetaDataExpanded/2), "c": "small"}
	w := boundMetaData("doc", m)
	if _, ok := m["b"]; ok || len(w) != 1 || m["a"] == nil || m["c"] != "small" {
		t.Errorf("kept %d keys, warnings %q", len(m), w)
	}
}

// FuzzSetPublicKeys: whatever keys come in, what is kept is one line per
// key that the meta-data writer can take, and each dropped key is named.
func FuzzSetPublicKeys(f *testing.F) {
	f.Add("ssh-ed25519\tAAAA me", "ssh-rsa B\rc")
	f.Add("\u2029", "ok key")
	f.Fuzz(func(t *testing.T, a, b string) {
		md := &Metadata{}
		md.setPublicKeys(nil, []string{a, b}, nil)
		for _, k := range md.PublicKeys {
			if k == "" || strings.TrimSpace(k) != k || len(k) > MaxPublicKey {
				t.Fatalf("kept %q", k)
			}
			for _, r := range k {
				if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
					t.Fatalf("kept %q with %U", k, r)
				}
			}
		}
		if len(md.PublicKeys) > 2 {
			t.Fatalf("%d keys from 2", len(md.PublicKeys))
		}
	})
}

package apply

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

const sampleReceipt = `{
  "version": 1,
  "links": {
    "bc:24:11:aa:bb:01": {
      "addresses": [
        "192.0.2.10/24",
        "2001:db8::10/64"
      ],
      "routes": [
        {
          "to": "0.0.0.0/0",
          "via": "192.0.2.1",
          "metric": 100
        },
        {
          "to": "203.0.113.0/24",
          "table": 100
        }
      ]
    }
  }
}
`

func TestReceiptRoundTrip(t *testing.T) {
	r, err := ParseReceipt([]byte(sampleReceipt))
	if err != nil {
		t.Fatal(err)
	}
	a := r.Links[mac1]
	if !slices.Equal(a.Addresses, []netip.Prefix{pfx("192.0.2.10/24"), pfx("2001:db8::10/64")}) {
		t.Errorf("addresses = %v", a.Addresses)
	}
	wantRoutes := []netcfg.Route{route("0.0.0.0/0", "192.0.2.1", 100), {To: pfx("203.0.113.0/24"), Table: 100}}
	if !slices.Equal(a.Routes, wantRoutes) {
		t.Errorf("routes = %v, want %v", a.Routes, wantRoutes)
	}
	if got := string(r.Marshal()); got != sampleReceipt {
		t.Errorf("Marshal() =\n%s\nwant\n%s", got, sampleReceipt)
	}
}

func TestReceiptMarshalIsSorted(t *testing.T) {
	r := &Receipt{Links: map[string]Added{
		mac1: {Addresses: []netip.Prefix{pfx("2001:db8::10/64"), pfx("192.0.2.10/24")},
			Routes: []netcfg.Route{{To: pfx("203.0.113.0/24"), Table: 100}, route("0.0.0.0/0", "192.0.2.1", 100)}},
		mac2: {}, // empty entries are dropped
	}}
	if got := string(r.Marshal()); got != sampleReceipt {
		t.Errorf("Marshal() =\n%s\nwant\n%s", got, sampleReceipt)
	}
	if got := string((*Receipt)(nil).Marshal()); got != "{\n  \"version\": 1,\n  \"links\": {}\n}\n" {
		t.Errorf("nil receipt marshals to %q", got)
	}
}

const stackedReceipt = `{
  "version": 2,
  "links": {
    "bc:24:11:aa:bb:01": {
      "addresses": [
        "192.0.2.10/24"
      ]
    }
  },
  "stacked": {
    "br0": {
      "addresses": [
        "198.51.100.5/24"
      ],
      "routes": [
        {
          "to": "0.0.0.0/0",
          "via": "198.51.100.1"
        }
      ]
    }
  }
}
`

// Stacked links make a version 2 receipt; without them the bytes are
// those of version 1, so an upgrade alone never rewrites the file.
func TestReceiptStacked(t *testing.T) {
	r, err := ParseReceipt([]byte(stackedReceipt))
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Stacked["br0"]; !slices.Equal(a.Addresses, []netip.Prefix{pfx("198.51.100.5/24")}) || len(a.Routes) != 1 {
		t.Errorf("stacked br0 = %+v", a)
	}
	if got := string(r.Marshal()); got != stackedReceipt {
		t.Errorf("Marshal() =\n%s\nwant\n%s", got, stackedReceipt)
	}
	r.Stacked["br0"] = Added{}
	if got := string(r.Marshal()); !strings.HasPrefix(got, "{\n  \"version\": 1,") || strings.Contains(got, "stacked") {
		t.Errorf("receipt without stacked entries = %s, want version 1 without a stacked field", got)
	}
	r.record(Op{Kind: AddAddress, LinkKind: netcfg.Bond, Name: "bond0", Address: pfx("203.0.113.5/24")}, nil)
	if a := r.Stacked["bond0"]; !slices.Equal(a.Addresses, []netip.Prefix{pfx("203.0.113.5/24")}) {
		t.Errorf("recorded stacked address = %+v", a)
	}
	if _, ok := r.Links[""]; ok {
		t.Error("a stacked operation was recorded under an empty MAC")
	}
}

func TestParseReceiptErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"links":{}}`, "version: 0 is not supported"},
		{`{"version":3,"links":{}}`, "version: 3 is not supported (want 1 or 2)"},
		{`{"version":1,"links":{},"stacked":{}}`, "stacked: not part of version 1"},
		{`{"version":2,"links":{},"stacked":{"a/b":{}}}`, `stacked["a/b"]: not a link name`},
		{`{"version":2,"links":{},"stacked":{"a-name-of-16-byt":{}}}`, `not a link name`},
		{`{"version":2,"links":{},"stacked":{"br0":{"addresses":[""]}}}`, `stacked["br0"].addresses[0]: missing address`},
		{`{"version":2,"links":{},"stacked":{"br0":{"routes":[{"to":"10.1.2.3/8"}]}}}`, `stacked["br0"].routes[0]: route 10.1.2.3/8 on-link is not in kernel form`},
		{`{"version":1,"links":{"BC:24:11:AA:BB:01":{}}}`, `links["BC:24:11:AA:BB:01"]: not a lower-case colon-separated MAC`},
		{`{"version":1,"links":{"eth0":{}}}`, `links["eth0"]: not a lower-case`},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"addresses":["192.0.2.300/24"]}}}`, "192.0.2.300"},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"addresses":[""]}}}`, `links["bc:24:11:aa:bb:01"].addresses[0]: missing address`},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"routes":[{"via":"192.0.2.1"}]}}}`, `routes[0].to: missing destination`},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"routes":[{"to":"0.0.0.0/0","via":"2001:db8::1"}]}}}`, `routes[0].via: 2001:db8::1 is not of the family`},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"routes":[{"to":"10.1.2.3/8"}]}}}`, `routes[0]: route 10.1.2.3/8 on-link is not in kernel form`},
		{`{"version":1,"links":{"bc:24:11:aa:bb:01":{"routes":[{"to":"10.0.0.0/8","metric":-1}]}}}`, `negative metric`},
		{`{"version":1,"links":`, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		_, err := ParseReceipt([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseReceipt(%s) = %v, want error containing %q", tt.doc, err, tt.want)
		}
	}
}

func TestLoadReceipt(t *testing.T) {
	dir := t.TempDir()

	r, err := LoadReceipt(filepath.Join(dir, "missing.json"))
	if err != nil || len(r.Links) != 0 {
		t.Errorf("missing receipt: %v, %v; want empty and no error", r, err)
	}

	bad := filepath.Join(dir, "corrupt.json")
	os.WriteFile(bad, []byte(`{"version":1,"links":{"bc:24:11:aa:bb:01":{"addresses":[`), 0o644)
	if _, err := LoadReceipt(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt receipt: error %v does not name %s", err, bad)
	}

	path := filepath.Join(dir, "var/lib/seedkeeper/network-receipt.json")
	r, _ = ParseReceipt([]byte(sampleReceipt))
	if changed, err := r.Save(path); err != nil || !changed {
		t.Fatalf("first Save = %v, %v; want changed", changed, err)
	}
	if changed, err := r.Save(path); err != nil || changed {
		t.Errorf("second Save = %v, %v; want unchanged", changed, err)
	}
	got, err := LoadReceipt(path)
	if err != nil || string(got.Marshal()) != sampleReceipt {
		t.Errorf("LoadReceipt after Save = %v (%v)", got, err)
	}

	link := filepath.Join(dir, "link.json")
	os.Symlink(path, link)
	if _, err := r.Save(link); !errors.Is(err, fsutil.ErrSymlink) {
		t.Errorf("Save through a symlink = %v, want ErrSymlink", err)
	}
}

func FuzzParseReceipt(f *testing.F) {
	f.Add([]byte(sampleReceipt))
	f.Add([]byte(`{"version":1,"links":{}}`))
	f.Add([]byte(`{"version":1,"links":{"bc:24:11:aa:bb:01":{"routes":[{"to":"::/0","via":"fe80::1","metric":1024}]}}}`))
	f.Add([]byte(`{"version":1,"links":{"bc:24:11:aa:bb:01":{"addresses":["::ffff:1.2.3.4/120"]}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(stackedReceipt))
	f.Add([]byte(`{"version":2,"links":{},"stacked":{"bond0.100":{"routes":[{"to":"::/0","via":"2001:db8::1","metric":1024}]}}}`))
	f.Add([]byte(`{"version":1,"links":{"bc:24:11:aa:bb:01":{"alt_names":["ens4","enp0s3"]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReceipt(data)
		if err != nil {
			return
		}
		out := r.Marshal()
		r2, err := ParseReceipt(out)
		if err != nil {
			t.Fatalf("re-parsing our own output %s: %v", out, err)
		}
		if again := r2.Marshal(); string(again) != string(out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}

// The alternative names seedkeeper gave a NIC are in the receipt, so that
// only those are ever given up; one that is not a link name, or one on a
// stacked link, makes the receipt unreadable as any other bad field does.
func TestReceiptAltNames(t *testing.T) {
	r := &Receipt{Links: map[string]Added{}}
	r.recordAltName(mac1, "ens4", true)
	r.recordAltName(mac1, "enp0s3", true)
	r.recordAltName(mac1, "ens4", true)
	back, err := ParseReceipt(r.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Links[mac1].AltNames; !slices.Equal(got, []string{"enp0s3", "ens4"}) {
		t.Errorf("alt names = %q", got)
	}
	back.recordAltName(mac1, "ens4", false)
	back.recordAltName(mac1, "enp0s3", false)
	if _, ok := back.Links[mac1]; ok || strings.Contains(string(back.Marshal()), "alt_names") {
		t.Errorf("a NIC with nothing of seedkeeper's stays in the receipt:\n%s", back.Marshal())
	}
	for _, doc := range []string{
		`{"version":1,"links":{"` + mac1 + `":{"alt_names":["bad name"]}}}`,
		`{"version":1,"links":{"` + mac1 + `":{"alt_names":["ens4","ens4"]}}}`,
		`{"version":2,"links":{},"stacked":{"bond0":{"made":true,"alt_names":["ens4"]}}}`,
	} {
		if _, err := ParseReceipt([]byte(doc)); err == nil || strings.Contains(err.Error(), "bad name") {
			t.Errorf("ParseReceipt(%s) = %v", doc, err)
		}
	}
}

package datasource

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

const smFixtures = "../testdata/smartos"

// smStore returns the store of testdata/smartos/web01.json, with
// cloud-init:user-data from cloud-init-user-data.bin (NUL, bytes that are
// not UTF-8, trailing blanks: a JSON fixture cannot hold them).
func smStore(t testing.TB) *mdatatest.Store {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(smFixtures, "web01.json"))
	if err != nil {
		t.Fatal(err)
	}
	var kv map[string]string
	if err := json.Unmarshal(b, &kv); err != nil {
		t.Fatalf("web01.json: %v", err)
	}
	st := mdatatest.NewStore()
	for k, v := range kv {
		st.SetString(k, v)
	}
	st.Set("cloud-init:user-data", smUserData(t))
	return st
}

func smUserData(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(smFixtures, "cloud-init-user-data.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smWant is what the SmartOS read must return for smStore read over transport.
func smWant(t testing.TB, transport string) *Metadata {
	t.Helper()
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	// Each sdc:routes entry goes on the nic whose subnet holds its gateway.
	viaNet1 := netcfg.Route{To: p("198.51.100.0/24"), Via: a("10.88.0.1")}
	viaNet0 := netcfg.Route{To: p("192.0.2.128/25"), Via: a("203.0.113.254")}
	return &Metadata{
		Source: SourceSmartOS,
		Origin: Origin{Transport: transport, Items: []string{
			"sdc:uuid", "hostname", "root_authorized_keys", "user-script", "user-data",
			"cloud-init:user-data", "sdc:datacenter_name", "sdc:vendor-data",
			"sdc:operator-script", "sdc:hostname", "sdc:dns_domain", "sdc:nics",
			"sdc:resolvers", "sdc:routes", "seedkeeper:network-drivers",
		}},
		InstanceID: "4A1B2C3D-0000-1111-2222-333344445555",
		MachineID:  "4a1b2c3d-0000-1111-2222-333344445555",
		Hostname:   "web01",
		PublicKeys: []string{
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb7wN0fX4pT3kq0jO2mYcDdS8vRzL9uQe1aW6xKx0Yt admin@example.com",
			"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7mD0xq4Vx1tO9oXgZ8jK2cQ5yH3wR6uP1sN7eL4aB0fT9vM2kJ8hG5dC3xW1zQ6 deploy@example.com",
		},
		UserData:   smUserData(t),
		VendorData: []byte("#cloud-config\nbootcmd:\n  - echo vendor\n"),
		Network: &netcfg.Config{
			Interfaces: []netcfg.Interface{
				{
					ID: "net0", Kind: netcfg.Physical, Name: "net0", MAC: "90:b8:d0:4a:1b:01", MTU: 1500,
					Addresses: []netip.Prefix{p("203.0.113.10/24"), p("2001:db8:10::10/64")},
					Routes: []netcfg.Route{
						{To: p("0.0.0.0/0"), Via: a("203.0.113.1")},
						{To: p("::/0"), Via: a("2001:db8:10::1")},
						viaNet0,
					},
				},
				{
					// Not primary: its gateway is not used.
					ID: "net1", Kind: netcfg.Physical, Name: "net1", MAC: "90:b8:d0:4a:1b:02", MTU: 9000,
					Addresses: []netip.Prefix{p("10.88.0.10/24")},
					Routes:    []netcfg.Route{viaNet1},
				},
			},
			DNS: netcfg.DNS{
				Nameservers: []netip.Addr{a("192.0.2.53"), a("2001:db8::53")},
				Search:      []string{"example.com"},
			},
		},
		NetworkDrivers:    []string{"virtio_net", "e1000"},
		NetworkDriversSet: true,
		MetaData:          map[string]any{"network-drivers": "virtio_net, e1000"},
		SmartOS: &SmartOSExtras{
			UserScript:       []byte("#!/bin/sh\necho user-script\n"),
			OperatorScript:   []byte("#!/bin/sh\necho operator\n"),
			LegacyUserData:   []byte("legacy user-data, kept as is\n"),
			HasUserScript:    true,
			HasOperator:      true,
			HasLegacyUser:    true,
			AvailabilityZone: "us-east-1",
			DNSDomain:        "example.com",
		},
	}
}

// smDiff reports the fields of got that differ from want.
func smDiff(t *testing.T, got, want *Metadata) {
	t.Helper()
	if got == nil {
		t.Fatal("no metadata")
	}
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if reflect.DeepEqual(g, w) {
			continue
		}
		switch name {
		case "Network", "SmartOS":
			gj, _ := json.MarshalIndent(g, "", " ")
			wj, _ := json.MarshalIndent(w, "", " ")
			t.Errorf("%s =\n%s\nwant\n%s", name, gj, wj)
		default:
			t.Errorf("%s = %#v\nwant %#v", name, g, w)
		}
	}
}

// smTempDir is a short scratch directory: a unix socket path must fit in
// 108 bytes, which t.TempDir under a long test name may not.
func smTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sk-smartos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// smHost starts a host serving st on a unix socket, as a zone's
// metadata.sock, and returns it with a client for that socket.
func smHost(t testing.TB, st *mdatatest.Store) (*mdatatest.Host, *mdata.Client) {
	t.Helper()
	h := mdatatest.NewHost(st)
	t.Cleanup(func() { h.Close() })
	path := filepath.Join(smTempDir(t), "metadata.sock")
	if _, err := h.ListenUnix(path); err != nil {
		t.Fatal(err)
	}
	c := mdata.New(mdata.Unix(path), nil)
	t.Cleanup(func() { c.Close() })
	return h, c
}

// smRead reads st over a unix socket; the test fails on an error.
func smRead(t *testing.T, st *mdatatest.Store) (*Metadata, *mdatatest.Host) {
	t.Helper()
	h, c := smHost(t, st)
	md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
	if err != nil {
		t.Fatalf("reading SmartOS: %v\n%s", err, h.TranscriptString())
	}
	return md, h
}

func smContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// smMinimal is a store with only sdc:uuid.
func smMinimal() *mdatatest.Store {
	st := mdatatest.NewStore()
	st.SetString("sdc:uuid", mdatatest.SampleUUID)
	return st
}

// smRequests returns the requests the host received, in order, as
// "GET key" or "KEYS", decoded from the V2 frames of the transcript.
func smRequests(t testing.TB, h *mdatatest.Host) []string {
	t.Helper()
	var out []string
	for _, e := range h.Transcript() {
		if e.Kind != mdatatest.KindRequest {
			continue
		}
		f := strings.Fields(string(e.Data))
		if len(f) < 5 || f[0] != "V2" {
			t.Fatalf("request %q is not a V2 frame", e.Data)
		}
		r := f[4]
		if len(f) == 6 {
			k, err := base64.StdEncoding.DecodeString(f[5])
			if err != nil {
				t.Fatalf("request %q: %v", e.Data, err)
			}
			r += " " + string(k)
		}
		out = append(out, r)
	}
	return out
}

func smB64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestReadSmartOSKeyMapping(t *testing.T) {
	_, c := smHost(t, smStore(t))
	md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
	if err != nil {
		t.Fatal(err)
	}
	smDiff(t, md, smWant(t, c.Transport().String()))
	if !strings.HasPrefix(md.Origin.Transport, "unix:/") {
		t.Errorf("Origin.Transport = %q, want unix:PATH", md.Origin.Transport)
	}
}

func TestReadSmartOSHostnameFallback(t *testing.T) {
	for _, tc := range []struct {
		name             string
		hostname, sdcHst *string
		want             string
	}{
		{name: "hostname wins", hostname: ptr(" custom \n"), sdcHst: ptr("sdc-name"), want: "custom"},
		{name: "sdc:hostname when hostname is absent", sdcHst: ptr(" sdc-name\n"), want: "sdc-name"},
		{name: "sdc:hostname when hostname is blank", hostname: ptr(" \n"), sdcHst: ptr("sdc-name"), want: "sdc-name"},
		{name: "sdc:uuid when both are absent", want: mdatatest.SampleUUID},
		{name: "sdc:uuid when both are empty", hostname: ptr(""), sdcHst: ptr(""), want: mdatatest.SampleUUID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := smMinimal()
			if tc.hostname != nil {
				st.SetString("hostname", *tc.hostname)
			}
			if tc.sdcHst != nil {
				st.SetString("sdc:hostname", *tc.sdcHst)
			}
			md, _ := smRead(t, st)
			if md.Hostname != tc.want {
				t.Errorf("Hostname = %q, want %q", md.Hostname, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// root_authorized_keys is a file: space around a line, a TAB included,
// and blank lines are not keys, and earn no warning; a TAB between the
// fields of a key does.
func TestReadSmartOSAuthorizedKeysLines(t *testing.T) {
	st := smMinimal()
	st.SetString("root_authorized_keys", "ssh-ed25519 AAAA one\t\n\t\n# ssh-rsa comment\nssh-rsa BBBB\ttwo\n")
	md, _ := smRead(t, st)
	if want := []string{"ssh-ed25519 AAAA one", "ssh-rsa BBBB two"}; !slices.Equal(md.PublicKeys, want) {
		t.Errorf("PublicKeys = %q, want %q", md.PublicKeys, want)
	}
	if want := []string{"root_authorized_keys line 4: a TAB between fields was replaced by a space"}; !slices.Equal(md.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", md.Warnings, want)
	}
}

func TestReadSmartOSAbsentKeys(t *testing.T) {
	md, h := smRead(t, smMinimal())
	want := &Metadata{
		Source:     SourceSmartOS,
		Origin:     Origin{Transport: md.Origin.Transport, Items: []string{"sdc:uuid"}},
		InstanceID: mdatatest.SampleUUID,
		MachineID:  mdatatest.SampleUUID,
		Hostname:   mdatatest.SampleUUID,
		SmartOS:    &SmartOSExtras{},
	}
	smDiff(t, md, want)
	// NOTFOUND is an answer: one GET per key, none retried, one session.
	st := h.Stats()
	if st.Requests["GET"] != len(smartosKeys) || st.Requests["KEYS"] != 0 || st.Streams != 1 || st.Probes != 1 || st.Negotiations != 1 {
		t.Errorf("host stats %+v, want %d GETs, no KEYS, one stream, one probe, one NEGOTIATE", st, len(smartosKeys))
	}
}

func TestReadSmartOSEmptyValues(t *testing.T) {
	st := smMinimal()
	for _, k := range []string{"hostname", "root_authorized_keys", "user-script", "user-data",
		"cloud-init:user-data", "sdc:vendor-data", "sdc:operator-script", "sdc:nics"} {
		st.SetString(k, "")
	}
	md, _ := smRead(t, st)
	if md.UserData == nil || len(md.UserData) != 0 || md.VendorData == nil || len(md.VendorData) != 0 {
		t.Errorf("UserData %q, VendorData %q: want present and empty", md.UserData, md.VendorData)
	}
	ex := md.SmartOS
	if !ex.HasUserScript || len(ex.UserScript) != 0 || !ex.HasOperator || len(ex.OperatorScript) != 0 ||
		!ex.HasLegacyUser || len(ex.LegacyUserData) != 0 {
		t.Errorf("SmartOS extras %+v: want each script present and empty", ex)
	}
	if md.PublicKeys != nil || md.Hostname != mdatatest.SampleUUID {
		t.Errorf("PublicKeys %q, Hostname %q", md.PublicKeys, md.Hostname)
	}
	// An empty sdc:nics is present: a configuration with no interfaces
	// (the network is ours and has nothing on it), not "leave it alone".
	if md.Network == nil || len(md.Network.Interfaces) != 0 {
		t.Errorf("Network = %+v, want an empty configuration", md.Network)
	}
	if !slices.Contains(md.Origin.Items, "cloud-init:user-data") {
		t.Errorf("Origin.Items %q lacks the empty cloud-init:user-data", md.Origin.Items)
	}
}

func TestReadSmartOSNoInstanceID(t *testing.T) {
	for name, st := range map[string]*mdatatest.Store{
		"absent": mdatatest.NewStore(),
		"blank":  func() *mdatatest.Store { s := mdatatest.NewStore(); s.SetString("sdc:uuid", " \n"); return s }(),
	} {
		t.Run(name, func(t *testing.T) {
			_, c := smHost(t, st)
			_, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
			if err == nil || !strings.Contains(err.Error(), "sdc:uuid") {
				t.Errorf("err = %v, want one naming sdc:uuid", err)
			}
		})
	}
}

// TestReadSmartOSWireSequence checks the requests on the wire against the
// ones cloud-init 22.4.2 sends (testdata/smartos/cloud-init-22.4.2-kvm-requests.txt).
// The differences, on purpose:
//   - no GET iptables_disable or motd_sys_info: cloud-init reads them and
//     does nothing with them;
//   - GET seedkeeper:network-drivers last: the hotplug allowlist;
//   - KEYS comes after the first value that needs the base64 check, and
//     only then: sdc: keys, sdc:uuid and the other exempt keys do not
//     (cloud-init sends it after sdc:uuid, which its missing comma fails
//     to exempt).
func TestReadSmartOSWireSequence(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(smFixtures, "cloud-init-22.4.2-kvm-requests.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cloudInit []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			cloudInit = append(cloudInit, l)
		}
	}

	_, h := smRead(t, mdatatest.Default())
	got := smRequests(t, h)

	var want []string
	for _, r := range cloudInit {
		switch r {
		case "KEYS", "GET iptables_disable", "GET motd_sys_info":
			continue
		}
		want = append(want, r)
		if r == "GET hostname" { // the first value that needs the check
			want = append(want, "KEYS")
		}
	}
	want = append(want, "GET "+KeyNetworkDrivers)
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// One stream, one probe, one negotiation, before the first request.
	var kinds []string
	for _, e := range h.Transcript() {
		switch e.Kind {
		case mdatatest.KindOpen, mdatatest.KindProbe, mdatatest.KindNegotiate:
			kinds = append(kinds, e.Kind.String())
		case mdatatest.KindRequest:
			kinds = append(kinds, "request")
		case mdatatest.KindMalformed, mdatatest.KindUnknown:
			t.Errorf("host saw a bad line: %v", e)
		}
	}
	if i := slices.Index(kinds, "request"); i != 3 || !slices.Equal(kinds[:3], []string{"open", "probe", "negotiate"}) ||
		slices.Contains(kinds[3:], "open") || slices.Contains(kinds[3:], "probe") || slices.Contains(kinds[3:], "negotiate") {
		t.Errorf("session events %q, want open, probe, negotiate once, then only requests", kinds)
	}
}

func TestReadSmartOSKeysOnlyWhenNeeded(t *testing.T) {
	// Only exempt keys: no KEYS on the wire.
	st := mdatatest.Default()
	st.Delete("hostname")
	st.Delete("cloud-init:user-data")
	st.SetString("user-data", "legacy")
	st.SetString(KeyNetworkDrivers, "virtio_net")
	_, h := smRead(t, st)
	if n := h.Stats().Requests["KEYS"]; n != 0 {
		t.Errorf("%d KEYS requests with only exempt keys, want none:\n%s", n, strings.Join(smRequests(t, h), "\n"))
	}

	// Two customer keys that need the check: one KEYS, before the
	// second GET of a customer key.
	_, h = smRead(t, mdatatest.Default())
	if n := h.Stats().Requests["KEYS"]; n != 1 {
		t.Errorf("%d KEYS requests, want 1", n)
	}
}

func TestReadSmartOSBase64(t *testing.T) {
	const (
		script  = "#!/bin/sh\necho hi\n"
		cfg     = "#cloud-config\nhostname: h\n"
		uuidB64 = "NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1" // looks like base64, and is
	)
	nics := `[{"interface":"net0","mac":"90:b8:d0:4a:1b:01","ips":["192.0.2.10/24"]}]`
	// base is a store whose every key holds a valid base64 value.
	base := func() *mdatatest.Store {
		st := mdatatest.NewStore()
		st.SetString("sdc:uuid", uuidB64)
		st.SetString("hostname", smB64("decoded-host"))
		st.SetString("cloud-init:user-data", smB64(cfg))
		st.SetString("user-script", smB64(script))
		st.SetString("user-data", smB64("legacy"))
		st.SetString("root_authorized_keys", smB64("ssh-ed25519 AAAA k"))
		st.SetString("sdc:vendor-data", smB64("vendor"))
		st.SetString("sdc:hostname", smB64("sdc-host"))
		st.SetString("sdc:nics", nics)
		st.SetString(KeyNetworkDrivers, "virtio_net")
		return st
	}
	type values struct{ hostname, userData, userScript, legacy, keys, vendor string }
	raw := values{smB64("decoded-host"), smB64(cfg), smB64(script), smB64("legacy"), smB64("ssh-ed25519 AAAA k"), smB64("vendor")}
	for _, tc := range []struct {
		name  string
		flags map[string]string
		want  values
		gets  []string // extra GETs expected on the wire
	}{
		{name: "no flags", want: raw},
		{name: "base64_all=true", flags: map[string]string{"base64_all": "true"},
			want: values{"decoded-host", cfg, raw.userScript, raw.legacy, raw.keys, raw.vendor}, gets: []string{"base64_all"}},
		{name: "base64_all=yes", flags: map[string]string{"base64_all": " Yes\n"},
			want: values{"decoded-host", cfg, raw.userScript, raw.legacy, raw.keys, raw.vendor}, gets: []string{"base64_all"}},
		{name: "base64_all=false", flags: map[string]string{"base64_all": "false", "base64_keys": "hostname"},
			want: values{"decoded-host", raw.userData, raw.userScript, raw.legacy, raw.keys, raw.vendor}, gets: []string{"base64_all", "base64_keys"}},
		{name: "base64_keys", flags: map[string]string{"base64_keys": "cloud-init:user-data, nothing"},
			want: values{raw.hostname, cfg, raw.userScript, raw.legacy, raw.keys, raw.vendor}, gets: []string{"base64_keys"}},
		// cloud-init's missing comma makes sdc:uuid and user-data
		// decodable; ours keeps them (and the other exempt keys) as they
		// are whatever the flags say.
		{name: "base64_keys naming exempt keys", flags: map[string]string{"base64_keys": "sdc:uuid,user-data,user-script,root_authorized_keys,sdc:vendor-data"},
			want: raw, gets: []string{"base64_keys"}},
		// cloud-init strips three characters of "b64-" and asks for
		// "-cloud-init:user-data"; ours asks for the flag itself.
		{name: "b64-key=true", flags: map[string]string{"b64-cloud-init:user-data": "true", "b64-hostname": "false"},
			want: values{raw.hostname, cfg, raw.userScript, raw.legacy, raw.keys, raw.vendor}, gets: []string{"b64-hostname", "b64-cloud-init:user-data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base()
			for k, v := range tc.flags {
				st.SetString(k, v)
			}
			md, h := smRead(t, st)
			got := values{md.Hostname, string(md.UserData), string(md.SmartOS.UserScript),
				string(md.SmartOS.LegacyUserData), strings.Join(md.PublicKeys, "\n"), string(md.VendorData)}
			if got != tc.want {
				t.Errorf("values %+v\nwant   %+v", got, tc.want)
			}
			// Never decoded: sdc: keys (sdc:nics stays JSON) and sdc:uuid.
			if md.InstanceID != uuidB64 || md.Network == nil || len(md.Network.Interfaces) != 1 {
				t.Errorf("InstanceID %q, Network %+v: sdc: keys must not be decoded", md.InstanceID, md.Network)
			}
			if !slices.Equal(md.NetworkDrivers, []string{"virtio_net"}) {
				t.Errorf("NetworkDrivers = %q", md.NetworkDrivers)
			}

			reqs := smRequests(t, h)
			var extra []string
			for _, r := range reqs {
				k, ok := strings.CutPrefix(r, "GET ")
				if strings.HasPrefix(k, "-") {
					t.Errorf("request %q: cloud-init's broken b64- strip reproduced", r)
				}
				if ok && !slices.Contains(smartosKeys, k) {
					extra = append(extra, k)
				}
			}
			if !slices.Equal(extra, tc.gets) {
				t.Errorf("extra GETs %q, want %q", extra, tc.gets)
			}
			if n := h.Stats().Requests["KEYS"]; n != 1 {
				t.Errorf("%d KEYS requests, want 1", n)
			}
		})
	}
}

func TestReadSmartOSBase64Invalid(t *testing.T) {
	const secret = "not*base64 s3cret!"
	st := smMinimal()
	st.SetString("base64_all", "true")
	st.SetString("cloud-init:user-data", secret)
	st.SetString("hostname", smB64("host1")+"\n") // a trailing newline is fine
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, c := smHost(t, st)
	md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if string(md.UserData) != secret || md.Hostname != "host1" {
		t.Errorf("UserData %q, Hostname %q: want the raw value kept and the valid one decoded", md.UserData, md.Hostname)
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "key=cloud-init:user-data") ||
		!strings.Contains(out, "not valid base64") {
		t.Errorf("log:\n%s\nwant one warning naming cloud-init:user-data", out)
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("log leaks the value:\n%s", out)
	}
}

func TestReadSmartOSNetworkAbsent(t *testing.T) {
	st := mdatatest.Default()
	st.Delete("sdc:nics") // resolvers and routes alone do not make a config
	md, _ := smRead(t, st)
	if md.Network != nil {
		t.Errorf("Network = %+v, want nil: no sdc:nics leaves the network alone", md.Network)
	}
	if md.SmartOS.DNSDomain != "example.com" {
		t.Errorf("DNSDomain = %q", md.SmartOS.DNSDomain)
	}
}

func TestReadSmartOSNetworkInvalid(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
		whole            bool // sdc:nics unreadable: the whole network is left alone
	}{
		{"sdc:nics", `[{"interface":"net0",`, "sdc:nics: invalid JSON", true},
		{"sdc:nics", `{"interface":"net0"}`, "sdc:nics", true},
		{"sdc:nics", `[{"interface":"net0","ips":["300.1.1.1/24"]}]`, "sdc:nics[0].ips[0]", false},
		{"sdc:routes", `[{"dst":"198.51.100.0/24"`, "sdc:routes: invalid JSON", false},
		{"sdc:resolvers", `["192.0.2.53",]`, "sdc:resolvers: invalid JSON", false},
	} {
		t.Run(tc.key+" "+tc.value, func(t *testing.T) {
			st := mdatatest.Default()
			st.SetString(tc.key, tc.value)
			_, c := smHost(t, st)
			// An unreadable network leaves the network alone;
			// the rest of the metadata is used. One bad field of a
			// readable sdc:nics leaves out that field alone, and the
			// network config's notes say which.
			md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
			if err != nil {
				t.Fatalf("err = %v, want the network dropped and the rest read", err)
			}
			if md.InstanceID == "" || len(md.PublicKeys) == 0 {
				t.Errorf("ID %q, keys %d", md.InstanceID, len(md.PublicKeys))
			}
			if !tc.whole {
				if md.Network == nil || len(md.Network.Notes) != 1 || !strings.Contains(md.Network.Notes[0], tc.want) {
					t.Errorf("Network %+v, want it kept with one note naming %q", md.Network, tc.want)
				}
				if len(md.Warnings) != 1 || md.Warnings[0] != md.Network.Notes[0] {
					t.Errorf("Warnings = %q, want the note", md.Warnings)
				}
				return
			}
			if md.Network != nil {
				t.Errorf("Network %+v", md.Network)
			}
			if len(md.Warnings) != 1 || !strings.Contains(md.Warnings[0], tc.want) || !strings.Contains(md.Warnings[0], "leaving the network alone") {
				t.Errorf("Warnings = %q, want one naming %q", md.Warnings, tc.want)
			}
		})
	}
}

func TestReadSmartOSNetworkDrivers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   *string
		set     bool
		drivers []string
		bad     bool
	}{
		{name: "absent"},
		{name: "list", value: ptr("virtio_net, e1000,virtio_net\n"), set: true, drivers: []string{"virtio_net", "e1000"}},
		// An empty string is a malformed list (parseNetworkDrivers), not
		// an empty one: it allows nothing, and says why.
		{name: "empty", value: ptr(""), set: true, bad: true},
		{name: "malformed", value: ptr("virtio_net;e1000"), set: true, bad: true},
		{name: "a name with a space", value: ptr("virtio net"), set: true, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := smMinimal()
			st.SetString("base64_all", "true") // never applies to this key
			st.SetString("hostname", smB64("h"))
			if tc.value != nil {
				st.SetString(KeyNetworkDrivers, *tc.value)
			}
			var logs bytes.Buffer
			_, c := smHost(t, st)
			md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if md.NetworkDriversSet != tc.set {
				t.Errorf("NetworkDriversSet = %v, want %v", md.NetworkDriversSet, tc.set)
			}
			if tc.bad {
				if md.NetworkDrivers != nil {
					t.Errorf("NetworkDrivers = %q, want nil for a malformed list", md.NetworkDrivers)
				}
				if err := NetworkDriversError(md); !errors.Is(err, ErrBadNetworkDrivers) {
					t.Errorf("NetworkDriversError = %v, want ErrBadNetworkDrivers", err)
				}
				if !strings.Contains(logs.String(), "key="+KeyNetworkDrivers) {
					t.Errorf("log:\n%s\nwant a warning naming %s", logs.String(), KeyNetworkDrivers)
				}
				return
			}
			if !reflect.DeepEqual(md.NetworkDrivers, tc.drivers) {
				t.Errorf("NetworkDrivers = %#v, want %#v", md.NetworkDrivers, tc.drivers)
			}
			if err := NetworkDriversError(md); err != nil {
				t.Errorf("NetworkDriversError = %v, want nil", err)
			}
		})
	}
}

// smPipe is a transport to h over net.Pipe whose connections turn a GET
// of failKey into a GET of a blank key, which the agent answers with
// FAILURE "Invalid GET Request": a real FAILURE frame for that key, from
// the simulated agent itself.
type smPipe struct {
	h       *mdatatest.Host
	failKey string
}

func (p smPipe) Open(context.Context) (mdata.Conn, error) {
	guest, host := net.Pipe()
	go p.h.Serve(host)
	return &smFailConn{Conn: guest, key: p.failKey}, nil
}

func (p smPipe) Shared() bool   { return false }
func (p smPipe) String() string { return "pipe:" + p.failKey }

type smFailConn struct {
	net.Conn
	key string
	buf []byte
}

func (c *smFailConn) Write(b []byte) (int, error) {
	c.buf = append(c.buf, b...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(c.buf[:i])
		c.buf = c.buf[i+1:]
		if f := strings.Fields(line); len(f) == 6 && f[0] == "V2" && f[4] == "GET" && f[5] == smB64(c.key) {
			body := f[3] + " GET " + smB64(" ")
			line = fmt.Sprintf("V2 %d %08x %s", len(body), crc32.ChecksumIEEE([]byte(body)), body)
		}
		if _, err := c.Conn.Write([]byte(line + "\n")); err != nil {
			return 0, err
		}
	}
}

func TestReadSmartOSFailure(t *testing.T) {
	for _, key := range []string{"sdc:uuid", "cloud-init:user-data", "sdc:nics", KeyNetworkDrivers} {
		t.Run(key, func(t *testing.T) {
			h := mdatatest.NewHost(mdatatest.Default())
			t.Cleanup(func() { h.Close() })
			c := mdata.New(smPipe{h, key}, nil)
			defer c.Close()
			md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
			var he *mdata.HostError
			if md != nil || err == nil || !strings.Contains(err.Error(), key) || !errors.As(err, &he) {
				t.Fatalf("reading SmartOS = %v, %v; want a host error naming %s", md, err, key)
			}
			if he.Message != "Invalid GET Request" {
				t.Errorf("host message %q", he.Message)
			}
			// The FAILURE is final: no retry, no later key asked for.
			reqs := smRequests(t, h)
			if last := reqs[len(reqs)-1]; last != "GET  " {
				t.Errorf("last request %q, want the failed one (rewritten to a blank key)", last)
			}
			n := 0
			for _, r := range reqs {
				if strings.HasPrefix(r, "GET ") {
					n++
				}
			}
			if want := slices.Index(smartosKeys, key) + 1; n != want {
				t.Errorf("%d GETs, want %d:\n%s", n, want, strings.Join(reqs, "\n"))
			}
		})
	}
}

// TestIntegrationSmartOSPTY reads the fixture through a real pty, as from
// /dev/ttyS1, while the host misbehaves as shared serial lines and
// restarting agents do; the metadata must come out exactly right.
func TestIntegrationSmartOSPTY(t *testing.T) {
	testenv.Integration(t)
	for _, tc := range []struct {
		name  string
		fault mdatatest.Fault
		down  time.Duration
	}{
		{name: "normal"},
		{name: "stale-frame", fault: mdatatest.Fault{Mode: mdatatest.StaleFrame}},
		{name: "bad-crc", fault: mdatatest.Fault{Mode: mdatatest.BadCRC}},
		{name: "garbage-line", fault: mdatatest.Fault{Mode: mdatatest.GarbageLine}},
		{name: "fail-probe x3", fault: mdatatest.Fault{Mode: mdatatest.FailProbe, Count: 3}},
		// LP #1667735: the agent is not there at boot and comes up later.
		{name: "down then up", down: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mdatatest.NewHost(smStore(t))
			t.Cleanup(func() { h.Close() })
			pty, err := h.StartPTY()
			if err != nil {
				t.Skipf("needs a pty pair (/dev/ptmx with devpts mounted, Linux): %v", err)
			}
			h.SetFault(tc.fault)
			if tc.down > 0 {
				h.DownFor(tc.down)
			}
			c := mdata.New(mdata.Serial(pty.Path()), nil)
			defer c.Close()
			md, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
			if err != nil {
				t.Fatalf("reading SmartOS: %v\n%s", err, h.TranscriptString())
			}
			smDiff(t, md, smWant(t, "serial:"+pty.Path()))
			st := h.Stats()
			if tc.fault.Mode != mdatatest.Normal && st.Faults == 0 {
				t.Errorf("the fault never acted: %+v", st)
			}
			if tc.down > 0 && st.Discarded == 0 {
				t.Errorf("nothing was sent while the host was down: %+v", st)
			}
		})
	}
}

func TestDetectSmartOS(t *testing.T) {
	write := func(t *testing.T, root, p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listen := func(t *testing.T, root, p string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	const dmi = "/sys/class/dmi/id/product_name"

	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, root string)
		forced    string
		transport string // with ROOT for the scratch root; "" for ErrNoSource
		reason    string // a part of the reason, or of the error
	}{
		{name: "forced unix", forced: "unix:/run/md.sock", transport: "unix:/run/md.sock", reason: "explicitly",
			setup: func(t *testing.T, r string) { write(t, r, dmi, "VMware Virtual Platform\n") }},
		{name: "forced serial beats a zone socket", forced: "serial:/dev/ttyS3", transport: "serial:/dev/ttyS3", reason: "explicitly",
			setup: func(t *testing.T, r string) { listen(t, r, "/native/.zonecontrol/metadata.sock") }},
		{name: "LX zone socket", transport: "unix:ROOT/native/.zonecontrol/metadata.sock", reason: "zone socket /native/.zonecontrol/metadata.sock",
			setup: func(t *testing.T, r string) {
				listen(t, r, "/native/.zonecontrol/metadata.sock")
				write(t, r, dmi, "SmartDC HVM\n")
			}},
		{name: "native zone socket", transport: "unix:ROOT/.zonecontrol/metadata.sock", reason: "zone socket /.zonecontrol/metadata.sock",
			setup: func(t *testing.T, r string) { listen(t, r, "/.zonecontrol/metadata.sock") }},
		{name: "SmartDC HVM", transport: "serial:ROOT/dev/ttyS1", reason: `"SmartDC HVM"`,
			setup: func(t *testing.T, r string) { write(t, r, dmi, "SmartDC HVM\n") }},
		{name: "a regular file is not a socket", reason: "VMware Virtual Platform",
			setup: func(t *testing.T, r string) {
				write(t, r, "/native/.zonecontrol/metadata.sock", "")
				write(t, r, dmi, "VMware Virtual Platform\n")
			}},
		{name: "other DMI product", reason: `"Standard PC (Q35 + ICH9, 2009)" is not SmartDC`,
			setup: func(t *testing.T, r string) { write(t, r, dmi, "Standard PC (Q35 + ICH9, 2009)\n") }},
		{name: "nothing at all", reason: "no DMI product name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := smTempDir(t)
			if tc.setup != nil {
				tc.setup(t, root)
			}
			d, err := detectSmartOS(context.Background(), Options{Root: root, MdataTransport: tc.forced})
			tr, reason := d.Transport(), d.Reason
			if err != nil {
				t.Fatal(err)
			}
			if tc.transport == "" {
				if d.Found || tr != nil || !strings.Contains(reason, tc.reason) {
					t.Fatalf("detectSmartOS = %+v; want not found, saying %q", d, tc.reason)
				}
				return
			}
			if !d.Found {
				t.Fatalf("detectSmartOS = %+v, want found", d)
			}
			if want := strings.ReplaceAll(tc.transport, "ROOT", root); tr.String() != want {
				t.Errorf("transport %q, want %q", tr, want)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q, want it to say %q", reason, tc.reason)
			}
		})
	}

	t.Run("bad forced transport", func(t *testing.T) {
		_, err := detectSmartOS(context.Background(), Options{Root: smTempDir(t), MdataTransport: "tcp:192.0.2.1:80"})
		if err == nil || errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "unknown kind") || strings.Contains(err.Error(), "192.0.2.1") {
			t.Errorf("err = %v, want a configuration error that describes the transport without quoting it", err)
		}
	})
}

// BenchmarkReadSmartOS reads the Default store: "new" opens a session per
// read (socket connect or port open, lock and drain, probe, NEGOTIATE), as
// a boot does; "reused" reads again over a session already open.
func BenchmarkReadSmartOS(b *testing.B) {
	bench := func(b *testing.B, tr mdata.Transport, reuse bool) {
		ctx := context.Background()
		c := mdata.New(tr, nil)
		defer c.Close()
		if reuse {
			if _, err := Read(ctx, SourceSmartOS, Options{MdataClient: c}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if !reuse {
				c = mdata.New(tr, nil)
			}
			md, err := Read(ctx, SourceSmartOS, Options{MdataClient: c})
			if err != nil || md.Network == nil {
				b.Fatal(md, err)
			}
			if !reuse {
				c.Close()
			}
		}
	}
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	path := filepath.Join(smTempDir(b), "metadata.sock")
	if _, err := h.ListenUnix(path); err != nil {
		b.Fatal(err)
	}
	b.Run("unix/new", func(b *testing.B) { bench(b, mdata.Unix(path), false) })
	b.Run("unix/reused", func(b *testing.B) { bench(b, mdata.Unix(path), true) })

	pty, err := h.StartPTY()
	if err != nil {
		b.Skipf("needs a pty pair (/dev/ptmx with devpts mounted, Linux): %v", err)
	}
	b.Run("pty/new", func(b *testing.B) { bench(b, mdata.Serial(pty.Path()), false) })
	b.Run("pty/reused", func(b *testing.B) { bench(b, mdata.Serial(pty.Path()), true) })
}

// FuzzReadSmartOS feeds host values through the base64 options, the
// network keys and the driver list. The read must not panic, must
// fail only for the network keys, naming one, and must otherwise keep
// user-data as given or decoded from base64, never anything else.
func FuzzReadSmartOS(f *testing.F) {
	f.Add("true", "", []byte(smB64("#cloud-config\n")), []byte(`[{"interface":"net0","ips":["dhcp"]}]`), "virtio_net")
	f.Add("", "cloud-init:user-data,hostname", []byte("not base64"), []byte(`[`), "e1000;")
	f.Add("no", "", []byte("\x00\xff raw"), []byte(`[{"interface":"net0","mac":"x"}]`), "")
	f.Add("1", "", []byte("aGk=\n"), []byte(`null`), "a,,b")
	f.Fuzz(func(t *testing.T, b64All, b64Keys string, userData, nics []byte, drivers string) {
		st := smMinimal()
		st.SetString("base64_all", b64All)
		st.SetString("base64_keys", b64Keys)
		st.Set("cloud-init:user-data", userData)
		st.Set("sdc:nics", nics)
		st.SetString(KeyNetworkDrivers, drivers)
		h := mdatatest.NewHost(st)
		defer h.Close()
		c := mdata.New(smPipe{h: h}, nil)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		md, err := Read(ctx, SourceSmartOS, Options{MdataClient: c})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "smartos: sdc:") {
				t.Fatalf("error %q does not name a sdc: key", err)
			}
			return
		}
		dec, _ := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(userData)))
		if !bytes.Equal(md.UserData, userData) && !bytes.Equal(md.UserData, dec) {
			t.Fatalf("UserData %q from %q", md.UserData, userData)
		}
		if md.NetworkDriversSet && (md.NetworkDrivers == nil) != (NetworkDriversError(md) != nil) {
			t.Fatalf("drivers %q but NetworkDriversError %v", md.NetworkDrivers, NetworkDriversError(md))
		}
	})
}

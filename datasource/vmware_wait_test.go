package datasource

import (
	"context"
	"errors"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestParseWaitOnNetwork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       any
		want    WaitOnNetwork
		wantErr string // "" for none
	}{
		{"absent", nil, WaitOnNetwork{}, ""},
		{"booleans", map[string]any{"ipv4": true, "ipv6": false}, WaitOnNetwork{IPv4: true}, ""},
		{"both", map[string]any{"ipv4": true, "ipv6": true}, WaitOnNetwork{IPv4: true, IPv6: true}, ""},
		// cloud-init's translate_bool: its words, any case, trimmed.
		{"words", map[string]any{"ipv4": " YES ", "ipv6": "On"}, WaitOnNetwork{IPv4: true, IPv6: true}, ""},
		{"false words", map[string]any{"ipv4": "off", "ipv6": "No"}, WaitOnNetwork{}, ""},
		{"numbers", map[string]any{"ipv4": int64(1), "ipv6": int64(0)}, WaitOnNetwork{IPv4: true}, ""},
		{"string numbers", map[string]any{"ipv4": "0", "ipv6": "1"}, WaitOnNetwork{IPv6: true}, ""},
		{"null family", map[string]any{"ipv4": nil, "ipv6": true}, WaitOnNetwork{IPv6: true}, ""},
		{"empty mapping", map[string]any{}, WaitOnNetwork{}, ""},
		// One bad family degrades that family only.
		{"bad word", map[string]any{"ipv4": "sure", "ipv6": true}, WaitOnNetwork{IPv6: true},
			"bad wait-on-network: ipv4: a string of 4 bytes that is not a boolean word"},
		{"bad number", map[string]any{"ipv4": int64(2)}, WaitOnNetwork{},
			"bad wait-on-network: ipv4: a number, want a boolean"},
		{"bad list", map[string]any{"ipv6": []any{true}}, WaitOnNetwork{},
			"bad wait-on-network: ipv6: a list, want a boolean"},
		{"other keys", map[string]any{"ipv4": true, "ip4": true, "x": 1}, WaitOnNetwork{IPv4: true},
			"bad wait-on-network: 2 other keys ignored"},
		{"not a mapping", "ipv4", WaitOnNetwork{}, "bad wait-on-network: a string, want a mapping"},
		{"a list", []any{"ipv4"}, WaitOnNetwork{}, "bad wait-on-network: a list, want a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWaitOnNetwork(tc.v)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !errors.Is(err, errBadWaitOnNetwork)):
				t.Errorf("err = %v, want one starting %q wrapping errBadWaitOnNetwork", err, tc.wantErr)
			}
		})
	}
}

func TestParseWaitOnNetworkNeverQuotes(t *testing.T) {
	const secret = "hunter2-secret"
	_, err := parseWaitOnNetwork(map[string]any{"ipv4": secret, secret: true})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("err = %v: want an error that does not quote the value or the key", err)
	}
}

func FuzzParseWaitOnNetwork(f *testing.F) {
	for _, s := range []string{
		"wait-on-network: {ipv4: true, ipv6: false}\n",
		"wait-on-network: {ipv4: 'yes', ipv6: 'Off'}\n",
		"wait-on-network: {ipv4: 1, ipv6: 2}\n",
		"wait-on-network: {ipv4: [true]}\n",
		"wait-on-network: ipv4\n",
		"wait-on-network:\n",
		`{"wait-on-network": {"ipv6": "true", "other": null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		m, _, err := parseVMwareDoc(doc)
		if err != nil {
			return
		}
		w, err := parseWaitOnNetwork(m["wait-on-network"])
		if err != nil && !errors.Is(err, errBadWaitOnNetwork) {
			t.Fatalf("error %v does not wrap errBadWaitOnNetwork", err)
		}
		if err == nil && m["wait-on-network"] == nil && w.Any() {
			t.Fatalf("nothing asked, yet waiting for %s", w)
		}
	})
}

// The metadata's wait-on-network reaches Metadata through the real tools;
// a bad family is a dropped field, not a failed read.
func TestReadVMwareWaitOnNetwork(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.set("metadata", "instance-id: i-wait\nwait-on-network:\n  ipv4: true\n  ipv6: maybe\n")
	md := s.mustRead()
	if md.WaitOnNetwork != (WaitOnNetwork{IPv4: true}) {
		t.Errorf("WaitOnNetwork = %+v, want ipv4 only", md.WaitOnNetwork)
	}
	want := "bad wait-on-network: ipv6: a string of 5 bytes that is not a boolean word (want true, false, yes, no, on, off, 1 or 0); waiting for ipv4"
	if !slices.Contains(md.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", md.Warnings, want)
	}
}

// vmtools.Set sends cloud-init's one-argument info-set RPC through the
// tool named (here the stub tools), and the VMX then holds the value.
func TestSetGuestinfo(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool, ToolVMToolsd)
	ctx := context.Background()
	if err := vmtools.Set(ctx, s.runner(), ToolRPCTool, "local-ipv4", "192.0.2.10"); err != nil {
		t.Fatal(err)
	}
	if err := vmtools.Set(ctx, s.runner(), ToolVMToolsd, "local-ipv6", "2001:db8::10"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"vmware-rpctool|info-set guestinfo.local-ipv4 192.0.2.10",
		"vmtoolsd|--cmd|info-set guestinfo.local-ipv6 2001:db8::10",
	}
	if got := s.calls(); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if got := s.get("local-ipv4"); got != "192.0.2.10" {
		t.Errorf("guestinfo.local-ipv4 = %q", got)
	}
	if got := s.get("local-ipv6"); got != "2001:db8::10" {
		t.Errorf("guestinfo.local-ipv6 = %q", got)
	}
}

func TestSetGuestinfoToolFails(t *testing.T) {
	s := newStubVMX(t, ToolRPCTool)
	s.env = append(s.env, "GUESTINFO_FAIL_RPCTOOL=Permission denied")
	err := vmtools.Set(context.Background(), s.runner(), ToolRPCTool, "local-ipv4", "192.0.2.1")
	var te *vmtools.ToolError
	if !errors.As(err, &te) || te.ExitCode != 1 || te.Stderr != "Permission denied" || te.Command != "info-set guestinfo.local-ipv4" {
		t.Errorf("err = %#v, want a ToolError for the info-set with the tool's stderr", err)
	}
	s2 := newStubVMX(t)
	if err := vmtools.Set(context.Background(), s2.runner(), ToolRPCTool, "local-ipv4", "192.0.2.1"); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("no tool installed: %v, want exec.ErrNotFound", err)
	}
}

package netcfg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check is Parse with nothing left out in silence: on every fixture its
// problems are Parse's notes, then Parse's error, word for word.
func TestCheckIsParse(t *testing.T) {
	var files []string
	for _, glob := range []string{fixtures + "/valid/*", fixtures + "/invalid/*.[jy]*", fixtures + "/disabled/*", "testdata/conformance/*.yaml", "testdata/conformance/v1/*.yaml"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 40 {
		t.Fatalf("only %d fixtures found", len(files))
	}
	noted := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		c, err := Parse(b)
		if c != nil {
			want = append(want, c.Notes...)
		}
		if err != nil && err != ErrDisabled {
			want = append(want, err.Error())
		}
		var got []string
		for _, p := range Check(b) {
			got = append(got, p.Msg)
			if p.Line < 1 || p.Column < 1 {
				t.Errorf("%s: %q at %d:%d, want a position", f, p.Msg, p.Line, p.Column)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: Check =\n%s\nwant Parse's\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		noted += len(got)
	}
	if noted == 0 {
		t.Error("no fixture has a note or an error: the comparison proves nothing")
	}
}

func TestCheckLocates(t *testing.T) {
	doc := `network:
  version: 2
  ethernets:
    eth0:
      dhcp4: maybe
      mtu: 70000
      addresses: [10.0.0.1/33, 10.0.0.2/24]
      dhcp5: true
      routes:
        - to: default
          via: 10.0.0.x
  wifis:
    wl0: {}
`
	want := map[string]string{
		"ethernets.eth0.dhcp4":         "5:14",
		"ethernets.eth0.mtu":           "6:12",
		"ethernets.eth0.addresses[0]":  "7:19",
		"ethernets.eth0.dhcp5":         "8:14",
		"ethernets.eth0.routes[0].via": "11:16",
		"wifis.wl0":                    "13:10",
	}
	got := map[string]string{}
	for _, p := range Check([]byte(doc)) {
		got[p.Path] = fmt.Sprintf("%d:%d", p.Line, p.Column)
		if strings.Contains(p.Msg, "maybe") || strings.Contains(p.Msg, "10.0.0.x") || strings.Contains(p.Msg, "70000") {
			t.Errorf("%q quotes the value", p.Msg)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("positions = %v\nwant %v", got, want)
	}

	for _, c := range []struct{ doc, at, msg string }{
		{"", "1:1", "empty network configuration"},
		{"version: 2\nethernets:\n  a: b\n c: d\n", "3:1", "not YAML"},
		{"version: 3\n", "1:10", "version: 3 is not a supported version"},
		{"version: 2\nethernets: {}\nversion: 2\n", "3:1", "a key is defined twice"},
		{"network:\n  version: 1\n  config: {}\n", "3:11", "config: must be a list"},
	} {
		ps := Check([]byte(c.doc))
		if len(ps) != 1 || fmt.Sprintf("%d:%d", ps[0].Line, ps[0].Column) != c.at || !strings.Contains(ps[0].Msg, c.msg) {
			t.Errorf("Check(%q) = %+v, want one problem at %s saying %q", c.doc, ps, c.at, c.msg)
		}
	}
	if ps := Check([]byte("version: 2\nethernets:\n  eth0: {dhcp4: true}\n")); ps != nil {
		t.Errorf("a clean document has problems: %+v", ps)
	}
	if ps := Check([]byte("network: {config: disabled}\n")); ps != nil {
		t.Errorf("a document that disables the network has problems: %+v", ps)
	}
}

// Config.Notes keeps the first 64 notes; Check says every one.
func TestCheckSaysEveryNote(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 2\nethernets:\n  eth0:\n    routes:\n")
	for range 100 {
		b.WriteString("      - {to: default, via: bad}\n")
	}
	c, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	ps := Check([]byte(b.String()))
	if len(c.Notes) != maxNotes+1 || len(ps) != 100 {
		t.Fatalf("Notes %d, Check %d; want %d and 100", len(c.Notes), len(ps), maxNotes+1)
	}
	if ps[99].Line != 104 || ps[99].Column != 28 {
		t.Errorf("the last route at %d:%d, want 104:28", ps[99].Line, ps[99].Column)
	}
}

func TestCheckSmartOS(t *testing.T) {
	list := `[
  {"mac": "90:b8:d0:ae:d1:ec", "interface": "net0", "ips": ["10.0.0.5/24", "bad"], "mtu": "x"},
  {"mac": "nope", "interface": "net1", "ips": ["dhcp"]}
]`
	got := func(doc string) string {
		var out []string
		for _, p := range CheckSmartOS([]byte(doc)) {
			out = append(out, fmt.Sprintf("%d:%d %s", p.Line, p.Column, p.Path))
		}
		return strings.Join(out, ", ")
	}
	if g, w := got(list), "2:91 sdc:nics[0].mtu, 2:76 sdc:nics[0].ips[1], 3:11 sdc:nics[1].mac"; g != w {
		t.Errorf("list: %s\nwant %s", g, w)
	}
	mapped := "{\"sdc:nics\": " + list + ",\n \"sdc:resolvers\": [\"8.8.8.8\", 5],\n \"sdc:dns_domain\": \"-x\"}"
	if g, w := got(mapped), "2:91 sdc:nics[0].mtu, 2:76 sdc:nics[0].ips[1], 3:11 sdc:nics[1].mac, 5:31 sdc:resolvers[1], 6:20 sdc:dns_domain"; g != w {
		t.Errorf("mapping: %s\nwant %s", g, w)
	}
	if g := got(`{"sdc:routes": []}`); !strings.HasPrefix(g, "1:1 ") {
		t.Errorf("a mapping without sdc:nics: %q, want a problem at 1:1", g)
	}
	if g := got(`[{"mac": "90:b8:d0:ae:d1:ec", "interface": "net0", "ips": ["dhcp"]}]`); g != "" {
		t.Errorf("a clean sdc:nics: %s", g)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"version: 2\nethernets: {eth0: {dhcp4: maybe}}\n", "network: {version: 1, config: [{type: physical}]}", "[{\"mac\": 1}]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The YAML library places an empty document's null on the
		// line after the text.
		// Its line breaks are CR, LF, CR LF, NEL, LS and PS.
		text := strings.ReplaceAll(string(b), "\r\n", "\n")
		lines := 2
		for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
			lines += strings.Count(text, br)
		}
		c, err := Parse(b)
		ps := Check(b)
		n := 0
		if c != nil {
			n = len(c.Notes)
		}
		if err != nil && err != ErrDisabled {
			n++
		}
		if len(ps) < n {
			t.Errorf("Check found %d problems, Parse %d", len(ps), n)
		}
		for _, p := range append(ps, CheckSmartOS(b)...) {
			if p.Line < 1 || p.Line > lines || p.Column < 1 {
				t.Errorf("%+v: not a position in %d lines", p, lines)
			}
		}
	})
}

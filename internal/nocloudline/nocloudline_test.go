package nocloudline

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line string
		want map[string]any // nil: not found
	}{
		{"root=/dev/vda1 ro ds=nocloud", map[string]any{"dsmode": "local"}},
		{"ds=nocloud-net", map[string]any{"dsmode": "net"}},
		{"ds=nocloud;s=https://10.42.42.42/configs/;i=iid-01;h=myhost", map[string]any{
			"seedfrom": "https://10.42.42.42/configs/", "instance-id": "iid-01", "local-hostname": "myhost", "dsmode": "net"}},
		{"quiet ds=nocloud-net;s=http://10.0.0.1:8000/__dmi.chassis-serial-number__/ console=ttyS0", map[string]any{
			"seedfrom": "http://10.0.0.1:8000/__dmi.chassis-serial-number__/", "dsmode": "net"}},
		{"ds=nocloud-net;s=file:///srv/seed/", map[string]any{"seedfrom": "file:///srv/seed/", "dsmode": "local"}},
		{"ds=nocloud;s=/srv/seed/;dsmode=net", map[string]any{"seedfrom": "/srv/seed/", "dsmode": "net"}},
		{"ds=nocloud;s=ftp://h/x/", map[string]any{"seedfrom": "ftp://h/x/", "dsmode": "net"}},
		{"ds=nocloud;s=gopher://h/", map[string]any{"seedfrom": "gopher://h/", "dsmode": "local"}},
		{"ds=nocloud;flag;k=v=w;;", map[string]any{"flag": nil, "k": "v=w", "dsmode": "local"}},
		{"ds=nocloud;i=", map[string]any{"instance-id": "", "dsmode": "local"}},
		// The last token starting with the matched prefix is used.
		{"ds=nocloud;i=first ds=nocloud-net;i=second", map[string]any{"instance-id": "second", "dsmode": "local"}},
		{"ds=nocloud;i=a ds=nocloud;i=b", map[string]any{"instance-id": "b", "dsmode": "local"}},
		{"", nil},
		{"ds=nocloudx", nil},
		{"xds=nocloud", nil},
		{"ds=nocloud-netx;i=a", nil},
		{"ds=NoCloud", nil},
		{"ci.ds=nocloud", nil},
		{"ds=ec2;i=x", nil},
	}
	for _, tt := range tests {
		got, found := Parse(tt.line)
		if found != (tt.want != nil) || tt.want != nil && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.line, got, found, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"ds=nocloud", "root=/dev/sda ds=nocloud-net;s=http://h/;i=x;h=y",
		"ds=nocloud;;;=;a=b=c;i", "ds=nocloud;s=file:///x/%s", " ds=nocloud;dsmode=disabled ",
		"ds=nocloud\tds=nocloud-net;i=\u00e9",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		md, found := Parse(line)
		if !found {
			if md != nil {
				t.Fatal("meta-data without a token")
			}
			return
		}
		if !strings.Contains(line, "ds=nocloud") {
			t.Fatalf("found in %q", line)
		}
		if _, ok := md["dsmode"]; !ok {
			t.Fatalf("no dsmode for %q", line)
		}
		for k, v := range md {
			if v != nil && strings.ContainsAny(v.(string), "; \t\n") || strings.ContainsAny(k, "; \t\n") {
				t.Fatalf("%q: pair %q=%q holds a separator", line, k, v)
			}
		}
	})
}

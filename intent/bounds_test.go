package intent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/alloctest"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// hostileUserData reads the user-data of a case of the hostile corpus.
func hostileUserData(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hostile", "nocloud", name, "user-data"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allocBudget is what reading one user-data may allocate: a document at
// every limit of its text costs less than this, so no alias may cost more.
const allocBudget = 48 << 20

// A 6 KB #cloud-config whose list of a thousand values is named by 1,040
// aliases stands for a million values. Reading it must cost what its
// limits allow, and refuse it, before any of the million is built.
func TestParseCloudConfigAliasBomb(t *testing.T) {
	bomb := hostileUserData(t, "alias-bomb-user-data")
	if len(bomb) > 8<<10 {
		t.Fatalf("the bomb is %d bytes; want a small document", len(bomb))
	}
	var cc CloudConfig
	n := alloctest.Bytes(func() { cc = ParseCloudConfig(bomb) })
	t.Logf("the alias bomb: %d bytes allocated", n)
	if n > 4<<20 {
		t.Errorf("reading the alias bomb allocated %d bytes; want under 4 MiB (refused before anything is expanded)", n)
	}
	if !cc.Broken || len(cc.Warnings) == 0 || !strings.Contains(cc.Warnings[0], "aliases") {
		t.Errorf("the alias bomb: broken %v, warnings %q; want it refused, saying why", cc.Broken, cc.Warnings)
	}
}

// At the limit a document is read, and costs what the limit allows; one
// value more and it is refused, at the cost of measuring it.
func TestParseCloudConfigAliasLimits(t *testing.T) {
	at := hostileUserData(t, "alias-user-data-at-limit")
	var cc CloudConfig
	n := alloctest.Bytes(func() { cc = ParseCloudConfig(at) })
	t.Logf("at the limit: %d bytes allocated", n)
	if cc.Broken || !cc.Parsed || cc.Top["refs"] == nil {
		t.Errorf("at the limit: broken %v, parsed %v, warnings %q; want it read", cc.Broken, cc.Parsed, cc.Warnings)
	}
	if n > allocBudget {
		t.Errorf("at the limit: allocated %d bytes; want under %d", n, allocBudget)
	}
	over := hostileUserData(t, "alias-user-data-over-limit")
	n = alloctest.Bytes(func() { cc = ParseCloudConfig(over) })
	t.Logf("over the limit: %d bytes allocated", n)
	if !cc.Broken || len(cc.Warnings) == 0 || !strings.Contains(cc.Warnings[0], "65536 values") {
		t.Errorf("over the limit: broken %v, warnings %q; want it refused, naming the limit", cc.Broken, cc.Warnings)
	}
	if n > 4<<20 {
		t.Errorf("over the limit: allocated %d bytes; want under 4 MiB", n)
	}
}

// The same through the boot's step, on a kept instance (where it runs on
// every boot).
func TestApplyAliasBombBounded(t *testing.T) {
	root, _ := userRoot(t)
	write(t, string(root), "etc/cloud/cloud.cfg", "system_info:\n  default_user:\n    name: admin\n", 0o644)
	md := func(ud []byte) *datasource.Metadata {
		return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1", UserData: ud}
	}
	if _, err := Apply(context.Background(), Options{Root: root, Metadata: md([]byte("#cloud-config\n")), InstanceID: "iid-1", NewInstance: true}); err != nil {
		t.Fatal(err)
	}
	var res *Result
	var err error
	n := alloctest.Bytes(func() {
		res, err = Apply(context.Background(), Options{Root: root, Metadata: md(hostileUserData(t, "alias-bomb-user-data")), InstanceID: "iid-1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > 8<<20 {
		t.Errorf("the boot's step on the alias bomb allocated %d bytes; want under 8 MiB", n)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "aliases are expanded") {
		t.Errorf("the alias bomb: warnings %q; want the limit named", res.Warnings)
	}
}

// overLimitUserData are valid #cloud-config documents that name the
// admin, each beyond one limit of the decoder: their text, their values,
// their nesting, what their aliases expand to.
func overLimitUserData(t *testing.T) map[string]string {
	head := "#cloud-config\nuser: admin\nssh_authorized_keys: [" + keyC + "]\n"
	return map[string]string{
		"text":    head + "bootcmd: ['" + strings.Repeat("x", 2<<20) + "']\n",
		"values":  head + "packages: [" + strings.Repeat("a,", 1<<16) + "a]\n",
		"nesting": head + "x: " + strings.Repeat("[", 101) + strings.Repeat("]", 101) + "\n",
		"aliases": head + strings.TrimPrefix(string(hostileUserData(t, "alias-user-data-over-limit")), "#cloud-config\n"),
	}
}

const keyC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICarolKeyC carol@box"

// A user-data beyond a limit of the decoder cannot say what it grants,
// and nothing of it is granted; but a key the admin removed from the
// meta-data is still removed, and the user-data's own keys, which it may
// still name, stay. What the boot cannot tell (a changed password) is said
// in the warnings and the log.
func TestApplyOverLimitUserDataStillRevokes(t *testing.T) {
	for name, over := range overLimitUserData(t) {
		t.Run(name, func(t *testing.T) {
			root, a := userRoot(t)
			good := "#cloud-config\nuser: admin\nssh_authorized_keys: [" + keyC + "]\npassword: $6$salt$hash1\n"
			md := func(ud string, keys ...string) *datasource.Metadata {
				return &datasource.Metadata{Source: datasource.SourceNoCloud, InstanceID: "iid-1", UserData: []byte(ud), PublicKeys: keys}
			}
			run := func(context.Context, []string, []byte) error { return nil }
			if _, err := Apply(context.Background(), Options{Root: root, Metadata: md(good, keyA, keyB), InstanceID: "iid-1", NewInstance: true, Run: run}); err != nil {
				t.Fatal(err)
			}
			if _, err := ApplyKeys(root, a, "/.ssh/authorized_keys", []string{keyA, keyB, keyC}, nil); err != nil { // what cloud-init did
				t.Fatal(err)
			}
			var logged strings.Builder
			res, err := Apply(context.Background(), Options{Root: root, Metadata: md(over, keyA), InstanceID: "iid-1", Run: run, Log: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, root.Path("/home/admin/.ssh/authorized_keys")), keyA+"\n"+keyC+"\n"; got != want {
				t.Errorf("authorized_keys %q, want %q: key B, removed from the meta-data, revoked; the user-data's key C left", got, want)
			}
			warn := strings.Join(res.Warnings, "\n")
			if !strings.Contains(warn, "held") || !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "held") {
				t.Errorf("warnings %q, log %q: want the held changes said loudly", warn, logged.String())
			}
			// The user-data whole again, without key C: it is removed.
			res, err = Apply(context.Background(), Options{Root: root, Metadata: md("#cloud-config\nuser: admin\n", keyA), InstanceID: "iid-1", Run: run})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, root.Path("/home/admin/.ssh/authorized_keys")), keyA+"\n"; got != want {
				t.Errorf("the user-data read again: authorized_keys %q, want %q (applied %q)", got, want, res.Applied)
			}
		})
	}
}

// The values of the image's cloud.cfg.d are bounded together as one document's are: 40
// files each at the limits of one are not all decoded, and a small file
// that fits what is left is still read.
func TestImageDefaultUserValueBound(t *testing.T) {
	root := t.TempDir()
	big := "packages: [" + strings.Repeat("a,", 30000) + "a]\n"
	for i := range 40 {
		write(t, root, fmt.Sprintf("etc/cloud/cloud.cfg.d/%02d-big.cfg", i), big, 0o644)
	}
	write(t, root, "etc/cloud/cloud.cfg.d/99-user.cfg", "system_info: {default_user: {name: admin}}\n", 0o644)
	var user string
	n := alloctest.Bytes(func() { user = ImageDefaultUser(sysroot.Root(root)) })
	t.Logf("%d bytes allocated", n)
	if user != "admin" {
		t.Errorf("ImageDefaultUser = %q; want admin", user)
	}
	if n > 24<<20 {
		t.Errorf("reading cloud.cfg.d allocated %d bytes; want what one document at the limits costs", n)
	}
}

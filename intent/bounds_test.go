package intent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/alloctest"
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

package intent

import (
	"os"
	"strings"
	"testing"
)

// docs/changes.md's table of settings says, for each row of Rules, who
// applies it: the page and the table cannot drift apart.
func TestRulesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/changes.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `") {
			rows = append(rows, l)
		}
	}
	want := map[Applier]string{BySeedkeeper: "seedkeeper", ByCloudInit: "cloud-init", NewInstance: "new instance"}
	for _, r := range Rules {
		name := "`" + r.Setting + "`"
		switch r.Setting {
		case "keys:", "password:":
			name = "`" + r.Setting + "USER`"
		case "user-data:":
			name = "`user-data:` any other key"
		}
		found := false
		for _, row := range rows {
			cells := strings.Split(strings.Trim(row, "| "), " | ")
			if !strings.Contains(cells[0], name) || (r.Setting == "user-data" && !strings.HasPrefix(cells[0], "`user-data` (")) {
				continue
			}
			found = true
			if got := strings.TrimSpace(cells[len(cells)-1]); got != want[r.Applier] {
				t.Errorf("%s: the page says %q, the table %q", r.Setting, got, want[r.Applier])
			}
			break
		}
		if !found {
			t.Errorf("%s: not in docs/changes.md's table", r.Setting)
		}
	}
}

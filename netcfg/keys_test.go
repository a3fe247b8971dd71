package netcfg

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// The README's tables of the v1 and v2 keys are views of Keys: each sits
// between two markers, and TestREADMEKeyTables fails when one is not what
// Keys renders (`go test ./netcfg -run TestREADMEKeyTables -update`
// rewrites them).
const readmePath = "../README.md"

func keyTableMarkers(format int) (begin, end string) {
	return fmt.Sprintf("<!-- v%d keys: rendered from netcfg.Keys by TestREADMEKeyTables; `go test ./netcfg -run TestREADMEKeyTables -update` rewrites it -->\n", format),
		fmt.Sprintf("<!-- end of v%d keys -->\n", format)
}

// keyPlaces are how the table names a Key's Where.
var keyPlaces = map[string]string{
	"network": "top level",
	"link":    "any link",
	"config":  "any link entry",
}

func supportCell(s Support) string {
	switch s {
	case Applied:
		return "✓"
	case Noted:
		return "noted"
	}
	return "n/a"
}

// renderKeyTable renders the keys of one format: a row per run of keys of
// one place that the stacks treat alike, in the table's order.
func renderKeyTable(format int) string {
	var b strings.Builder
	// The columns: the live apply, then each stack of Stacks.
	places := []string{"live"}
	b.WriteString("| where | keys | live |")
	for _, s := range Stacks {
		places = append(places, s.Name)
		b.WriteString(" " + s.Title + " |")
	}
	b.WriteString(" when noted: why |\n|---|---|" + strings.Repeat("---|", len(places)) + "---|\n")
	cells := func(k *Key) string {
		var c []string
		for _, p := range places {
			c = append(c, supportCell(k.In(p)))
		}
		return strings.Join(c, " | ")
	}
	var names []string
	var last *Key
	flush := func() {
		if last == nil {
			return
		}
		where := keyPlaces[last.Where]
		if where == "" {
			where = "`" + last.Where + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", where, strings.Join(names, ", "), cells(last), last.Why)
		names = names[:0]
	}
	for i := range Keys {
		k := &Keys[i]
		if k.Format != format {
			continue
		}
		if last == nil || k.Where != last.Where || cells(k) != cells(last) || k.Why != last.Why {
			flush()
		}
		names = append(names, "`"+k.Name+"`")
		last = k
	}
	flush()
	if format == 2 {
		b.WriteString("\n")
		fmt.Fprintf(&b, "Bond `parameters` rendered for networkd and applied live: %s (and `primary`, on the member's file).\n", paramList(slices.Collect(maps.Keys(bondKeys))))
		fmt.Fprintf(&b, "Bridge `parameters`: %s; `path-cost` and `port-priority` go on the member's file.\n", paramList(slices.Collect(maps.Keys(bridgeKeys))))
	}
	return b.String()
}

// paramList names parameters as v2 spells them (the reference's spelling
// first where netplan reads two).
func paramList(names []string) string {
	v2 := map[string]string{}
	for alias, model := range paramAliases {
		if model != "gratuitous-arp" {
			v2[model] = alias
		}
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if a := v2[n]; a != "" {
			out = append(out, "`"+a+"` (`"+n+"`)")
			continue
		}
		out = append(out, "`"+n+"`")
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// replaceBlock returns doc with the text between begin and end replaced
// by body, and the text that was there.
func replaceBlock(doc, begin, end, body string) (string, string, error) {
	before, rest, ok := strings.Cut(doc, begin)
	if !ok {
		return "", "", fmt.Errorf("no line %q", strings.TrimSpace(begin))
	}
	old, after, ok := strings.Cut(rest, end)
	if !ok {
		return "", "", fmt.Errorf("no line %q after %q", strings.TrimSpace(end), strings.TrimSpace(begin))
	}
	return before + begin + body + end + after, old, nil
}

func TestREADMEKeyTables(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, format := range []int{2, 1} {
		begin, end := keyTableMarkers(format)
		want := renderKeyTable(format)
		next, old, err := replaceBlock(doc, begin, end, want)
		if err != nil {
			t.Fatalf("README: %v", err)
		}
		if old != want && !*update {
			t.Errorf("README's table of the v%d keys is not what netcfg.Keys says: run `go test ./netcfg -run TestREADMEKeyTables -update`, or paste:\n%s", format, want)
		}
		doc = next
	}
	if *update && doc != string(b) {
		if err := os.WriteFile(readmePath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyTableRendering: a run of keys treated alike is one row, a change
// of place or of any stack's support starts another, and a stale block is
// found and replaced between its markers only.
func TestKeyTableRendering(t *testing.T) {
	savedKeys, savedStackKeys, savedLive := Keys, stackKeys, liveKeys
	t.Cleanup(func() { Keys, stackKeys, liveKeys = savedKeys, savedStackKeys, savedLive })
	Keys = []Key{
		{2, "ethernets", "a", ""},
		{2, "ethernets", "b", ""},
		{2, "ethernets", "c", ""},
		{2, "routes", "d", "not done"},
		{1, "config", "e", ""},
	}
	// Each stack declares its own keys: here the test's.
	liveKeys = except(NotApplicable, "v2 ethernets: a b c")
	stackKeys = map[string]keySupport{
		"networkmanager": except(Noted, "v2 ethernets: a b"),
		"networkd":       nil,
		"ifupdown":       except(Noted, "v2 ethernets: a b c"),
	}
	got := renderKeyTable(1)
	if want := "| any link entry | `e` | ✓ | ✓ | ✓ | ✓ |  |\n"; !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 3 {
		t.Errorf("v1 table:\n%s\nwant its one row %q", got, want)
	}
	got = renderKeyTable(2)
	for _, row := range []string{
		"| where | keys | live | NetworkManager | systemd-networkd | ifupdown | when noted: why |\n",
		"| `ethernets` | `a`, `b` | n/a | noted | ✓ | noted |  |\n",
		"| `ethernets` | `c` | n/a | ✓ | ✓ | noted |  |\n",
		"| `routes` | `d` | noted | noted | noted | noted | not done |\n",
	} {
		if !strings.Contains(got, row) {
			t.Errorf("v2 table:\n%s\nhas no row %q", got, row)
		}
	}
	begin, end := keyTableMarkers(2)
	doc := "intro\n" + begin + "stale\n" + end + "outro\n"
	next, old, err := replaceBlock(doc, begin, end, "fresh\n")
	if err != nil || old != "stale\n" || next != "intro\n"+begin+"fresh\n"+end+"outro\n" {
		t.Errorf("replaceBlock = %q, %q, %v", next, old, err)
	}
	if _, _, err := replaceBlock("intro\n"+begin, begin, end, ""); err == nil {
		t.Error("a block without its end marker was replaced")
	}
}

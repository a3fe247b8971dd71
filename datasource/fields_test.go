package datasource

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The one public-key filter: the readers (through setPublicKeys) and the
// seed writer keep and drop the same keys for the same reasons.
func TestFilterPublicKeys(t *testing.T) {
	big := "ssh-rsa " + strings.Repeat("A", MaxPublicKey)
	keys := []string{
		"  ssh-ed25519 AAAA one  ", // 0 kept, trimmed
		"",                         // 1 blank: skipped
		"  ",                       // 2 blank: skipped
		"ssh-rsa BBBB\ttwo",        // 3 TAB: dropped (readers replace it first)
		"ssh-rsa CCCC\u2028three",  // 4 line separator: dropped
		big,                        // 5 too long
		"ssh-rsa \xffDDDD",         // 6 invalid UTF-8
		"ssh-ed25519 EEEE five",    // 7 kept
	}
	kept, dropped := FilterPublicKeys(keys)
	if want := []string{"ssh-ed25519 AAAA one", "ssh-ed25519 EEEE five"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	want := map[int]string{
		3: "control character U+0009 at byte 12",
		4: "control character U+2028 at byte 12",
		5: fmt.Sprintf("%d bytes long, more than %d", len(big), MaxPublicKey),
		6: "invalid UTF-8 at byte 8",
	}
	if len(dropped) != len(want) {
		t.Fatalf("dropped %v, want indexes of %v", dropped, want)
	}
	for _, d := range dropped {
		if w, ok := want[d.Index]; !ok || d.Err == nil || d.Err.Error() != w {
			t.Errorf("dropped key %d: %v, want %q", d.Index, d.Err, w)
		}
		if strings.Contains(d.Err.Error(), "ssh-rsa") {
			t.Errorf("dropped key %d: the error quotes the key: %v", d.Index, d.Err)
		}
	}
}

// Keys beyond MaxPublicKeys in all are dropped, each saying so; a
// smaller key after them still fits.
func TestFilterPublicKeysBudget(t *testing.T) {
	k := "ssh-rsa " + strings.Repeat("A", MaxPublicKey-108)
	n := MaxPublicKeys / len(k)
	keys := slices.Repeat([]string{k}, n+2)
	keys = append(keys, "ssh-ed25519 small")
	kept, dropped := FilterPublicKeys(keys)
	if len(kept) != n+1 || kept[n] != "ssh-ed25519 small" {
		t.Errorf("kept %d keys (last %.20q), want %d and the small one last", len(kept), kept[len(kept)-1], n+1)
	}
	if len(dropped) != 2 || dropped[0].Index != n || dropped[1].Index != n+1 ||
		!strings.Contains(dropped[0].Err.Error(), fmt.Sprintf("already take %d bytes of %d", n*len(k), MaxPublicKeys)) {
		t.Errorf("dropped %v", dropped)
	}
}

// The readers turn a TAB between fields into a space and say so, then
// filter.
func TestSetPublicKeysNormalisesThenFilters(t *testing.T) {
	md := &Metadata{}
	md.setPublicKeys(nil, []string{"ssh-rsa AAAA\tone", "", "ssh-rsa B\nB"}, []string{"k0", "k1", "k2"})
	if !slices.Equal(md.PublicKeys, []string{"ssh-rsa AAAA one"}) || md.PublicKeysDropped != 1 {
		t.Errorf("PublicKeys = %q, %d dropped", md.PublicKeys, md.PublicKeysDropped)
	}
	want := []string{"k0: a TAB between fields was replaced by a space", "k2 dropped: control character U+000A at byte 9"}
	if !slices.Equal(md.Warnings, want) {
		t.Errorf("Warnings = %q, want %q", md.Warnings, want)
	}
}

func FuzzFilterPublicKeys(f *testing.F) {
	f.Add("ssh-ed25519 AAAA a\n\n# c\nssh-rsa B\tb\nssh-rsa \xff")
	f.Add(strings.Repeat("k", MaxPublicKey+1) + "\nx")
	f.Fuzz(func(t *testing.T, s string) {
		keys := strings.Split(s, "\n")
		kept, dropped := FilterPublicKeys(keys)
		if len(kept)+len(dropped) > len(keys) {
			t.Fatalf("%d kept and %d dropped of %d", len(kept), len(dropped), len(keys))
		}
		total := 0
		for _, k := range kept {
			if k == "" || k != strings.TrimSpace(k) || len(k) > MaxPublicKey || netcfg.CheckLine(k) != nil {
				t.Fatalf("kept %q", k)
			}
			total += len(k)
		}
		if total > MaxPublicKeys {
			t.Fatalf("kept %d bytes", total)
		}
		if again, d := FilterPublicKeys(kept); len(d) != 0 || !slices.Equal(again, kept) {
			t.Fatal("filtering what was kept changes it")
		}
	})
}

package pubkey

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// The one public-key filter: the readers (through setPublicKeys) and the
// seed writer keep and drop the same keys for the same reasons.
func TestFilter(t *testing.T) {
	big := "ssh-rsa " + strings.Repeat("A", MaxKey)
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
	kept, dropped := Filter(keys)
	if want := []string{"ssh-ed25519 AAAA one", "ssh-ed25519 EEEE five"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	want := map[int]string{
		3: "control character U+0009 at byte 12",
		4: "control character U+2028 at byte 12",
		5: fmt.Sprintf("%d bytes long, more than %d", len(big), MaxKey),
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

// Keys beyond MaxKeys in all are dropped, each saying so; a
// smaller key after them still fits.
func TestFilterBudget(t *testing.T) {
	k := "ssh-rsa " + strings.Repeat("A", MaxKey-108)
	n := MaxKeys / len(k)
	keys := slices.Repeat([]string{k}, n+2)
	keys = append(keys, "ssh-ed25519 small")
	kept, dropped := Filter(keys)
	if len(kept) != n+1 || kept[n] != "ssh-ed25519 small" {
		t.Errorf("kept %d keys (last %.20q), want %d and the small one last", len(kept), kept[len(kept)-1], n+1)
	}
	if len(dropped) != 2 || dropped[0].Index != n || dropped[1].Index != n+1 ||
		!strings.Contains(dropped[0].Err.Error(), fmt.Sprintf("already take %d bytes of %d", n*len(k), MaxKeys)) {
		t.Errorf("dropped %v", dropped)
	}
}

func FuzzFilter(f *testing.F) {
	f.Add("ssh-ed25519 AAAA a\n\n# c\nssh-rsa B\tb\nssh-rsa \xff")
	f.Add(strings.Repeat("k", MaxKey+1) + "\nx")
	f.Fuzz(func(t *testing.T, s string) {
		keys := strings.Split(s, "\n")
		kept, dropped := Filter(keys)
		if len(kept)+len(dropped) > len(keys) {
			t.Fatalf("%d kept and %d dropped of %d", len(kept), len(dropped), len(keys))
		}
		total := 0
		for _, k := range kept {
			if k == "" || k != strings.TrimSpace(k) || len(k) > MaxKey || netcfg.CheckLine(k) != nil {
				t.Fatalf("kept %q", k)
			}
			total += len(k)
		}
		if total > MaxKeys {
			t.Fatalf("kept %d bytes", total)
		}
		if again, d := Filter(kept); len(d) != 0 || !slices.Equal(again, kept) {
			t.Fatal("filtering what was kept changes it")
		}
	})
}

package datasource

import (
	"slices"
	"testing"
)

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

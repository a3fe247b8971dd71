package netcfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// Every document from outside is counted before it is decoded: a
// network-config of a million values, and sdc:nics, sdc:routes or
// sdc:resolvers as a JSON array of a million numbers (16 MiB is a value
// the mdata client takes), are refused without reaching a decoder.
func TestDocumentsAreCountedBeforeDecoding(t *testing.T) {
	many := []byte("[" + strings.Repeat("1,", 1<<20) + "1]")
	if _, err := Parse([]byte("network: {version: 2, ethernets: " + string(many) + "}")); !errors.Is(err, yamlx.ErrTooComplex) {
		t.Errorf("Parse = %v, want ErrTooComplex", err)
	}
	// sdc:nics too complex is an error; sdc:routes or sdc:resolvers too
	// complex leave out every route or resolver alone, with a note naming
	// the key, as any other bad value of theirs does.
	keys := [3]string{"sdc:nics", "sdc:routes", "sdc:resolvers"}
	for i := range 3 {
		args := [3][]byte{}
		args[i] = many
		c, err := FromSmartOS(args[0], args[1], args[2], "")
		if i == 0 {
			if !errors.Is(err, yamlx.ErrTooComplex) || !strings.HasPrefix(err.Error(), "sdc:nics") {
				t.Errorf("FromSmartOS with a complex sdc:nics = %v, want ErrTooComplex naming the key", err)
			}
			continue
		}
		if err != nil || len(c.Notes) != 1 || !strings.HasPrefix(c.Notes[0], keys[i]) || !strings.Contains(c.Notes[0], yamlx.ErrTooComplex.Error()) {
			t.Errorf("FromSmartOS with a complex %s = %v, notes %q; want it left out with a note naming the key", keys[i], err, c.Notes)
		}
	}
}

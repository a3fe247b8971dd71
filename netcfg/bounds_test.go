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
	for i := range 3 {
		args := [3][]byte{}
		args[i] = many
		_, err := FromSmartOS(args[0], args[1], args[2], "")
		if !errors.Is(err, yamlx.ErrTooComplex) || !strings.HasPrefix(err.Error(), "sdc:") {
			t.Errorf("FromSmartOS with argument %d = %v, want ErrTooComplex naming the key", i, err)
		}
	}
}

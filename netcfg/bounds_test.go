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

// Every number the metadata gives goes through the one range check
// (internal/bound), whatever type the decoder gave it: a metric of 2^40
// was taken as it was when YAML decoded it to an int, and refused when
// JSON did. The notes name the field and the range, never the value.
func TestNumbersRangeCheckedWithoutQuoting(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"metric as an int", `{version: 2, ethernets: {e: {match: {macaddress: "02:00:00:00:00:01"}, routes: [{to: default, via: 10.0.0.1, metric: 1099511627776}]}}}`,
			"metric: not a metric: out of range (want between 0 and 2147483647)"},
		{"metric as a string", `{version: 1, config: [{type: physical, name: e, mac_address: "02:00:00:00:00:01", subnets: [{type: static, address: 10.0.0.2/24, gateway: 10.0.0.1, metric: "7SECRET"}]}]}`,
			"metric: a string that is not a whole number"},
		{"MTU as a float", `{version: 2, ethernets: {e: {match: {macaddress: "02:00:00:00:00:01"}, mtu: 12345678.0}}}`,
			"mtu: not an MTU: out of range (want between 68 and 65535)"},
		{"MTU fractional", `{version: 2, ethernets: {e: {match: {macaddress: "02:00:00:00:00:01"}, mtu: 1500.5}}}`,
			"mtu: not a whole number"},
		{"route table", `{version: 2, ethernets: {e: {match: {macaddress: "02:00:00:00:00:01"}, routes: [{to: default, via: 10.0.0.1, table: -3}]}}}`,
			"table: not a routing table: out of range (want between 0 and 2147483647)"},
	} {
		// One bad number leaves out its field alone: the note says why.
		c, err := Parse([]byte(tt.doc))
		if err != nil {
			t.Fatalf("%s: %v, want the field left out alone", tt.name, err)
		}
		msg := strings.Join(c.Notes, "\n")
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s: notes %q, want one to say %q", tt.name, msg, tt.want)
		}
		for _, v := range []string{"1099511627776", "SECRET", "12345678", "1500.5", "-3"} {
			if strings.Contains(msg, v) {
				t.Errorf("%s: %q quotes the value", tt.name, msg)
			}
		}
	}
}

package apply

import (
	"strings"
	"testing"
)

// Bond and bridge parameters are checked by the one range check
// (internal/bound): the message names the parameter and the range, in
// the words of every other range error, and never the value or a port
// name the metadata gave.
func TestParamsRangeCheckedWithoutQuoting(t *testing.T) {
	for _, tt := range []struct {
		params map[string]string
		want   string
		bridge bool
	}{
		{map[string]string{"priority": "65536"}, "parameter priority: out of range (want between 0 and 65535)", true},
		{map[string]string{"path-cost": "SECRETPORT=70000000000000000000"}, "parameter path-cost: pair 1: out of range (want ", true},
		{map[string]string{"max-age": "99999999999999999999999"}, "parameter max-age: not a duration", true},
		{map[string]string{"forward-delay": "3601s"}, "parameter forward-delay: out of range (want between 0s and 1h0m0s)", true},
		{map[string]string{"min-links": "65537"}, "parameter min-links: out of range (want between 0 and 65536)", false},
		{map[string]string{"mode": "7"}, "parameter mode: not one of", false},
	} {
		var err error
		if tt.bridge {
			_, _, err = bridgeParams(tt.params)
		} else {
			_, _, err = bondParams(tt.params)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v: error = %v, want %q", tt.params, err, tt.want)
			continue
		}
		for _, v := range tt.params {
			for _, part := range strings.Split(v, "=") {
				if strings.Contains(err.Error(), part) {
					t.Errorf("%v: %q quotes the input", tt.params, err)
				}
			}
		}
	}
}

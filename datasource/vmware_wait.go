package datasource

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// errBadWaitOnNetwork wraps every error of parseWaitOnNetwork: the
// metadata's wait-on-network value, or one of its families, is not what
// cloud-init's VMware datasource reads.
var errBadWaitOnNetwork = errors.New("bad wait-on-network")

// WaitOnNetwork is the VMware metadata's wait-on-network: the address
// families that must be up on the owned links before cloud-init goes on.
type WaitOnNetwork struct {
	IPv4 bool `json:"ipv4,omitempty"`
	IPv6 bool `json:"ipv6,omitempty"`
}

// Any reports whether w waits for anything.
func (w WaitOnNetwork) Any() bool { return w.IPv4 || w.IPv6 }

// String names the families waited for: "ipv4", "ipv6", "ipv4 and ipv6"
// or "nothing".
func (w WaitOnNetwork) String() string {
	switch {
	case w.IPv4 && w.IPv6:
		return "ipv4 and ipv6"
	case w.IPv4:
		return "ipv4"
	case w.IPv6:
		return "ipv6"
	}
	return "nothing"
}

// The words cloud-init's translate_bool takes as true and as false, in
// any case, around white space.
var (
	waitTrueWords  = []string{"true", "1", "on", "yes"}
	waitFalseWords = []string{"false", "0", "off", "no"}
)

// parseWaitOnNetwork reads a wait-on-network metadata value the way
// cloud-init's VMware datasource does: a mapping with the keys ipv4 and
// ipv6, each a boolean or a word cloud-init takes as one (true, yes, on,
// 1; false, no, off, 0; any case), or a number 0 or 1. A null value or a
// missing key waits for nothing. A family whose value is anything else
// waits for nothing and is an error naming the family (the other family
// still counts: the returned value holds it), where cloud-init would
// silently not wait; a value that is not a mapping waits for nothing and
// is an error. Other keys are ignored, as cloud-init ignores them, and
// named in the error. Every error wraps errBadWaitOnNetwork and never
// quotes the value.
func parseWaitOnNetwork(v any) (WaitOnNetwork, error) {
	var w WaitOnNetwork
	if v == nil {
		return w, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return w, fmt.Errorf("%w: %s, want a mapping of ipv4 and ipv6", errBadWaitOnNetwork, yamlx.Kind(v))
	}
	var errs []string
	other := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var dst *bool
		switch k {
		case "ipv4":
			dst = &w.IPv4
		case "ipv6":
			dst = &w.IPv6
		default:
			other++
			continue
		}
		b, err := waitBool(m[k])
		if err != nil {
			errs = append(errs, k+": "+err.Error())
			continue
		}
		*dst = b
	}
	if other > 0 {
		errs = append(errs, fmt.Sprintf("%d other keys ignored: only ipv4 and ipv6 are read", other))
	}
	if len(errs) > 0 {
		return w, fmt.Errorf("%w: %s", errBadWaitOnNetwork, strings.Join(errs, "; "))
	}
	return w, nil
}

// waitBool is one family's value.
func waitBool(v any) (bool, error) {
	switch t := v.(type) {
	case nil:
		return false, nil
	case bool:
		return t, nil
	case int64:
		if t == 0 || t == 1 {
			return t == 1, nil
		}
	case uint64:
		if t == 0 || t == 1 {
			return t == 1, nil
		}
	case float64:
		if t == 0 || t == 1 {
			return t == 1, nil
		}
	case string:
		s := strings.ToLower(strings.TrimSpace(t))
		switch {
		case slices.Contains(waitTrueWords, s):
			return true, nil
		case slices.Contains(waitFalseWords, s), s == "":
			return false, nil
		}
		return false, fmt.Errorf("a string of %d bytes that is not a boolean word (want true, false, yes, no, on, off, 1 or 0)", len(t))
	}
	return false, fmt.Errorf("%s, want a boolean", yamlx.Kind(v))
}

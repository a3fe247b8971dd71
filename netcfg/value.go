package netcfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seedkeeper/seedkeeper/internal/bound"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// FieldError is an invalid value in a network configuration: Path names the
// field (config[2].subnets[0].address, ethernets.net0.routes[1].via,
// sdc:nics[1].ips[0]) and Msg says what is wrong with it.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// field is a decoded value together with the path that leads to it. The
// decoded documents come from yaml.v3 or encoding/json, so maps may be
// map[string]any or map[any]any and numbers int, uint64, float64 or
// json.Number.
type field struct {
	path string
	v    any
}

func (f field) errorf(format string, args ...any) error {
	return &FieldError{Path: f.path, Msg: fmt.Sprintf(format, args...)}
}

func (f field) key(k string) string {
	if f.path == "" {
		return k
	}
	return f.path + "." + k
}

// present reports whether the value is neither missing nor null.
func (f field) present() bool { return f.v != nil }

// mapping is a decoded YAML mapping with string keys.
type mapping struct {
	path string
	m    map[string]any
}

func (f field) mapping() (mapping, error) {
	switch m := f.v.(type) {
	case map[string]any:
		return mapping{f.path, m}, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return mapping{f.path, out}, nil
	}
	return mapping{}, f.errorf("must be a mapping, not %s", yamlx.Kind(f.v))
}

// get returns the field for key k (its value nil when absent).
func (m mapping) get(k string) field {
	p := k
	if m.path != "" {
		p = m.path + "." + k
	}
	return field{p, m.m[k]}
}

func (m mapping) has(k string) bool {
	v, ok := m.m[k]
	return ok && v != nil
}

// keys returns the mapping's keys, sorted.
func (m mapping) keys() []string {
	ks := make([]string, 0, len(m.m))
	for k := range m.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (m mapping) required(k string) (field, error) {
	f := m.get(k)
	if !f.present() {
		return f, f.errorf("missing")
	}
	return f, nil
}

func (f field) list() ([]field, error) {
	if f.v == nil {
		return nil, nil
	}
	l, ok := f.v.([]any)
	if !ok {
		return nil, f.errorf("must be a list, not %s", yamlx.Kind(f.v))
	}
	out := make([]field, len(l))
	for i, v := range l {
		out[i] = field{fmt.Sprintf("%s[%d]", f.path, i), v}
	}
	return out, nil
}

func (f field) str() (string, error) {
	s, ok := f.v.(string)
	if !ok {
		return "", f.errorf("must be a string, not %s", yamlx.Kind(f.v))
	}
	if err := CheckLine(s); err != nil {
		return "", f.errorf("%v", err)
	}
	return s, nil
}

// domains reads a list of DNS search domains.
func (f field) domains() ([]string, error) {
	l, err := f.strList()
	if err != nil {
		return nil, err
	}
	for _, d := range l {
		if err := checkDomain(d); err != nil {
			return nil, f.errorf("%v", err)
		}
	}
	return l, nil
}

// checkDomain accepts a search domain: 1 to 253 characters, none of them
// white space or control characters.
func checkDomain(d string) error {
	ok := d != "" && len(d) <= 253 && utf8.ValidString(d)
	for _, r := range d {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("a search domain of %d bytes is not one (1 to 253, no white space or control character)", len(d))
	}
	return nil
}

// strList reads a list of strings; a single string is split on white space,
// as cloud-init does for dns_nameservers and dns_search.
func (f field) strList() ([]string, error) {
	if s, ok := f.v.(string); ok {
		return strings.Fields(s), nil
	}
	l, err := f.list()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, err := e.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// integer reads a whole number from math.MinInt32 to math.MaxInt32; a
// string of decimal digits is accepted too (cloud-init converts with
// int()). The range is checked by the one range check (internal/bound),
// and no message quotes the value.
func (f field) integer() (int, error) {
	return f.intIn("a whole number", math.MinInt32, math.MaxInt32)
}

// intIn reads a whole number and checks it against [lo, hi] (lo and hi
// within the int32 range); what names the kind of number in errors ("an
// MTU", "a metric").
func (f field) intIn(what string, lo, hi int) (int, error) {
	var n int64
	switch v := f.v.(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	case uint64:
		n = int64(min(v, math.MaxInt64))
	case float64:
		if v != math.Trunc(v) {
			return 0, f.errorf("not a whole number")
		}
		n = int64(max(min(v, math.MaxInt32+1), math.MinInt32-1))
	case json.Number, string:
		s := strings.TrimSpace(fmt.Sprint(v))
		i, err := strconv.ParseInt(s, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			n = math.MaxInt64
		case err != nil:
			return 0, f.errorf("%s that is not a whole number", yamlx.Kind(v))
		default:
			n = i
		}
	default:
		return 0, f.errorf("must be a number, not %s", yamlx.Kind(f.v))
	}
	if err := bound.Check(f.path, n, int64(lo), int64(hi)); err != nil {
		var be *bound.Error
		errors.As(err, &be)
		return 0, f.errorf("not %s: %s", what, be.Reason())
	}
	return int(n), nil
}

// boolean reads true/false; the strings cloud-init's util.is_true and
// is_false know are accepted too.
func (f field) boolean() (bool, error) {
	switch b := f.v.(type) {
	case bool:
		return b, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
		return false, f.errorf("%q is not a boolean", b)
	case int:
		if b == 0 || b == 1 {
			return b == 1, nil
		}
	}
	return false, f.errorf("must be true or false, not %s", yamlx.Kind(f.v))
}

// scalar renders a scalar value as text, for parameters kept as strings.
func (f field) scalar() (string, error) {
	switch v := f.v.(type) {
	case string:
		return f.str()
	case bool:
		return strconv.FormatBool(v), nil
	case int, int64, uint64, json.Number:
		return fmt.Sprint(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", f.errorf("must be a string, number or boolean, not %s", yamlx.Kind(f.v))
}

func (f field) addr() (netip.Addr, error) {
	s, err := f.str()
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, f.errorf("%q is not an IP address", s)
	}
	return a, nil
}

func (f field) addrList() ([]netip.Addr, error) {
	ss, err := f.strList()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ss))
	for i, s := range ss {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			p := f.path
			if _, isList := f.v.([]any); isList {
				p = fmt.Sprintf("%s[%d]", f.path, i)
			}
			return nil, &FieldError{Path: p, Msg: fmt.Sprintf("%q is not an IP address", s)}
		}
		out = append(out, a)
	}
	return out, nil
}

func (f field) mac() (string, error) {
	s, err := f.str()
	if err != nil {
		return "", err
	}
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return "", f.errorf("%q is not a MAC address", s)
	}
	return hw.String(), nil
}

func (f field) mtu() (int, error) {
	return f.intIn("an MTU", 68, 65535)
}

// ifname reads a Linux interface name.
func (f field) ifname() (string, error) {
	s, err := f.str()
	if err != nil {
		return "", err
	}
	if !ValidLinkName(s) {
		return "", f.errorf("%q is not an interface name (1 to 15 characters, no \"/\", \":\" or white space)", s)
	}
	return s, nil
}

// ValidLinkName reports whether the kernel takes s as a link name: 1 to 15
// bytes of printable ASCII, no "/", ":" or white space, not "." or "..".
func ValidLinkName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == '/' || r == ':' || r == 0x7f || r > 0x7e {
			return false
		}
	}
	return true
}

// prefixFromMask turns a netmask into a prefix length: a number of bits, a
// dotted IPv4 mask, or (rarely) an IPv6 mask.
func prefixFromMask(mask string, is4 bool) (int, bool) {
	mask = strings.TrimSpace(mask)
	bitsMax := 128
	if is4 {
		bitsMax = 32
	}
	if n, err := strconv.Atoi(mask); err == nil {
		return n, n >= 0 && n <= bitsMax
	}
	m, err := netip.ParseAddr(mask)
	if err != nil || m.Is4() != is4 || m.Zone() != "" {
		return 0, false
	}
	b := m.AsSlice()
	ones := 0
	for i, x := range b {
		for bit := 7; bit >= 0; bit-- {
			if x&(1<<bit) == 0 {
				// The rest must be zero.
				rest := x & (1<<bit - 1)
				if rest != 0 {
					return 0, false
				}
				for _, y := range b[i+1:] {
					if y != 0 {
						return 0, false
					}
				}
				return ones, true
			}
			ones++
		}
	}
	return ones, true
}

// dedupe removes repeated elements, keeping the first of each.
func dedupe[T comparable](l []T) []T {
	if len(l) < 2 {
		return l
	}
	seen := make(map[T]bool, len(l))
	out := l[:0:0]
	for _, x := range l {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// maxMetric bounds a route metric or a routing table, as the int32 the
// decoders and netlink carry.
const maxMetric = math.MaxInt32

// metric reads a route metric.
func (f field) metric() (int, error) { return f.intIn("a metric", 0, maxMetric) }

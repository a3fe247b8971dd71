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

// domains reads a list of DNS search domains; a bad one is left out
// alone (noted in n).
func (f field) domains(n *notes) []string {
	l, paths := f.strItems(n, "the search domains", "the search domain")
	out := l[:0]
	for i, d := range l {
		if err := checkDomain(d); err != nil {
			n.drop(&FieldError{Path: paths[i], Msg: err.Error()}, "the search domain")
			continue
		}
		out = append(out, d)
	}
	return out
}

// checkDomain accepts a search domain: 1 to 253 of ASCII letters, digits,
// '.', '-' and '_' (a name in DNS's own form; an international name is
// written in its xn-- form), not starting with '-'. That keeps it one word
// of resolv.conf, of networkd's Domains= (where a leading '~' would make
// it a routing-only domain) and of ifupdown's dns-search, which the
// resolvconf hook reads unquoted in sh.
func checkDomain(d string) error {
	ok := d != "" && len(d) <= 253 && d[0] != '-'
	for i := 0; ok && i < len(d); i++ {
		ok = d[i] != '/' && nameByte(d[i])
	}
	if !ok {
		return fmt.Errorf("a search domain of %d bytes is not one (1 to 253 of A-Z a-z 0-9 . - _)", len(d))
	}
	return nil
}

// strList reads a list of strings; a single string is split on white space,
// as cloud-init does for dns_nameservers and dns_search. paths are the
// path of each element.
func (f field) strList() (l []string, paths []string, err error) {
	if s, ok := f.v.(string); ok {
		if err := CheckLine(s); err != nil {
			return nil, nil, f.errorf("%v", err)
		}
		l = strings.Fields(s)
		for range l {
			paths = append(paths, f.path)
		}
		return l, paths, nil
	}
	fl, err := f.list()
	if err != nil {
		return nil, nil, err
	}
	l = make([]string, 0, len(fl))
	for _, e := range fl {
		s, err := e.str()
		if err != nil {
			return nil, nil, err
		}
		l = append(l, s)
		paths = append(paths, e.path)
	}
	return l, paths, nil
}

// strItems reads a list of strings as strList does, for a list whose
// elements stand alone (nameservers, search domains): an element that is
// not a string, or not one line, is left out alone and noted in n as one;
// a value that is neither a string nor a list leaves out all.
func (f field) strItems(n *notes, all, one string) (l []string, paths []string) {
	if _, ok := f.v.([]any); !ok {
		l, paths, err := f.strList()
		if err != nil {
			n.drop(err, all)
			return nil, nil
		}
		return l, paths
	}
	fl, _ := f.list()
	for _, e := range fl {
		s, err := e.str()
		if err != nil {
			n.drop(err, one)
			continue
		}
		l = append(l, s)
		paths = append(paths, e.path)
	}
	return l, paths
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
		return false, f.errorf("not a boolean")
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
		return netip.Addr{}, f.errorf("not an IP address")
	}
	return a, nil
}

// addrList reads a list of IP addresses; a bad one is left out alone
// (noted in n).
func (f field) addrList(n *notes) []netip.Addr {
	ss, paths := f.strItems(n, "the nameservers", "the nameserver")
	out := make([]netip.Addr, 0, len(ss))
	for i, s := range ss {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			n.drop(&FieldError{Path: paths[i], Msg: "not an IP address"}, "the nameserver")
			continue
		}
		out = append(out, a)
	}
	return out
}

func (f field) mac() (string, error) {
	s, err := f.str()
	if err != nil {
		return "", err
	}
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return "", f.errorf("not a MAC address")
	}
	return hw.String(), nil
}

func (f field) mtu() (int, error) {
	return f.intIn("an MTU", 68, 65535)
}

// ifname reads a link name (see ValidLinkName).
func (f field) ifname() (string, error) {
	s, err := f.str()
	if err != nil {
		return "", err
	}
	if !ValidLinkName(s) {
		return "", f.errorf("%s", linkNameRule)
	}
	return s, nil
}

// linkNameRule says, without quoting the name, what ValidLinkName wants.
const linkNameRule = "not a link name (1 to 15 of A-Z a-z 0-9 . _ -, not starting with - and not . or ..)"

// ValidLinkName reports whether s may name a link. Every name that reaches
// the kernel or a file seedkeeper writes (a v1 name, a v2 set-name, a v2
// ID that names its link, a bond, bridge or VLAN name, a member or VLAN
// link) passes this one check: 1 to 15 bytes of ASCII letters, digits,
// '.', '_' and '-', not starting with '-', and not "." or "..".
//
// That alphabet is enough everywhere such a name goes:
//   - the kernel (dev_valid_name): at most IFNAMSIZ-1 = 15 bytes, no '/',
//     no white space, not "." or "..";
//   - systemd-networkd, whose Name= and other match keys are globs: none
//     of '*', '?', '[', ']' or '!' occurs, so a name matches only itself;
//   - NetworkManager, whose device specs and lists split on ',', ';' and
//     ' ' and read "mac:", "interface-name:" and "=" as prefixes: none of
//     those characters occurs;
//   - sh, which ifupdown runs its up/down lines with: no character of the
//     set is special to the shell (no quote, '$', '`', ';', '&', '|',
//     '<', '>', '(', ')', '*', '?', '[', '~', '#', '=', '\\' or white
//     space), and a leading '-' cannot make the name an option of ip(8).
func ValidLinkName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

// validNameGlob reports whether s is a link-name glob (v2 match.name) or
// a driver glob (match.driver): 1 to 64 bytes of the ValidLinkName
// alphabet and the glob characters '*', '?', '[', ']', '!' and '^'. It
// goes into networkd's Name= and Driver= (which are globs), never into a
// shell line or a NetworkManager list.
func validNameGlob(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) && !strings.ContainsRune("*?[]!^", rune(s[i])) {
			return false
		}
	}
	return true
}

// nameByte reports whether b is in the alphabet of ValidLinkName.
func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-'
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

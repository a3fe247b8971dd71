package netcfg

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// MaxExpandedSize bounds a network configuration once every YAML alias
// in it is expanded: about a thousand interfaces' worth, and far below
// what an alias-laden document of a few kilobytes can stand for.
const MaxExpandedSize = 1 << 20

// ErrDisabled is returned by Parse for a configuration that says
// {config: disabled}: the network must be left alone.
var ErrDisabled = errors.New("network configuration is disabled")

// Parse reads a cloud-init network configuration, version 1 or 2, YAML or
// JSON, with or without a top-level "network:" key.
//
// Unknown keys are ignored (netplan has many), but a v2 section of a
// device type seedkeeper does not handle (tunnels, wifis, vrfs ...) is
// left out with a note. One bad field degrades only what it belongs to:
// a bad route, address or nameserver is left out, a bad
// optional setting (mtu, dhcp4, accept-ra, a bond parameter) is left unset,
// and a link whose identity is bad (its name, MAC, members or VLAN link;
// an entry of a type seedkeeper does not handle) is left out; each is a
// line of Config.Notes naming the field. Only a document that cannot be
// read at all (not YAML, not a mapping, no known version, v1 config not a
// list) is an error, a *FieldError naming the field where it has one.
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty network configuration")
	}
	var doc any
	if err := yamlx.Unmarshal(data, &doc); err != nil {
		if errors.Is(err, yamlx.ErrTooComplex) || errors.Is(err, yamlx.ErrTooLarge) {
			return nil, fmt.Errorf("network configuration: %w", err)
		}
		return nil, fmt.Errorf("network configuration is not YAML or JSON: %w", yamlx.Describe(err))
	}
	return ParseValue(doc)
}

// ParseValue reads a network configuration that was already decoded from
// YAML or JSON, such as the "network" value of VMware guestinfo metadata.
//
// A value that would expand beyond MaxExpandedSize (YAML aliases naming
// one large part many times) is refused before it is read, so nothing
// rendered from it can be larger than a few times that.
func ParseValue(v any) (*Config, error) {
	return parseValue(v, &notes{})
}

// parseValue is ParseValue collecting its notes in n.
func parseValue(v any, n *notes) (*Config, error) {
	if n, ok := yamlx.Size(v, MaxExpandedSize); !ok {
		return nil, &FieldError{Msg: fmt.Sprintf("network configuration expands to more than %d bytes (%d counted; YAML aliases?)", MaxExpandedSize, n)}
	}
	top, err := field{v: v}.mapping()
	if err != nil {
		return nil, &FieldError{Msg: fmt.Sprintf("network configuration must be a mapping, not %s", yamlx.Kind(v))}
	}
	if !top.has("version") && top.has("network") {
		inner := top.m["network"]
		if top, err = (field{v: inner}).mapping(); err != nil {
			return nil, &FieldError{Path: "network", Msg: fmt.Sprintf("must be a mapping, not %s", yamlx.Kind(inner))}
		}
	}
	if s, ok := top.m["config"].(string); ok && s == "disabled" {
		return nil, ErrDisabled
	}
	vf, err := top.required("version")
	if err != nil {
		return nil, err
	}
	version, err := vf.integer()
	if err != nil {
		return nil, err
	}
	var c *Config
	switch version {
	case 1:
		c, err = parseV1(top, n)
	case 2:
		c, err = parseV2(top, n)
	default:
		return nil, vf.errorf("%d is not a supported version (1 or 2)", version)
	}
	if err != nil {
		return nil, err
	}
	if err := c.checkFileNames(); err != nil {
		return nil, err
	}
	return c, nil
}

// maxNotes bounds Config.Notes: a document of a million bad routes is
// told as the first ones and a count.
const maxNotes = 64

// notes collects what a parser leaves out (see Config.Notes).
type notes struct {
	list []string
	more int
	// all keeps every note (Check): the document's own bounds
	// (yamlx.MaxNodes) bound how many there are.
	all bool
	// paths holds the path of the field each note of list names, ""
	// where the error names none.
	paths []string
}

// drop notes that err made the parser leave out what (a route, the
// address, the link ...): err names the field, what the unit dropped.
func (n *notes) drop(err error, what string) {
	if len(n.list) >= maxNotes && !n.all {
		n.more++
		return
	}
	n.list = append(n.list, err.Error()+"; "+what+" left out")
	var fe *FieldError
	path := ""
	if errors.As(err, &fe) {
		path = fe.Path
	}
	n.paths = append(n.paths, path)
}

func (n *notes) result() []string {
	if n.more > 0 {
		return append(n.list, fmt.Sprintf("and %d more parts left out", n.more))
	}
	return n.list
}

// parseDestination reads one route destination: a CIDR, an address with a netmask
// or prefix key beside it, or "default" (0.0.0.0/0 or ::/0, by the family of
// via). The result is masked, as the kernel wants it.
func parseDestination(f field, mask field, prefixKey field, via netip.Addr) (netip.Prefix, error) {
	s, err := f.str()
	if err != nil {
		return netip.Prefix{}, err
	}
	if s == "default" {
		if via.Is6() {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), nil
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	}
	p, err := parseAddress(f, mask, prefixKey)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// parseAddress reads an address the v1 way: "a.b.c.d/len", "a.b.c.d/mask",
// or a bare address with a netmask (dotted, or a prefix length) or prefix
// key beside it. A bare address with neither gets /24 or /64, as in
// cloud-init.
func parseAddress(f field, mask field, prefixKey field) (netip.Prefix, error) {
	s, err := f.str()
	if err != nil {
		return netip.Prefix{}, err
	}
	addrText, maskText, hasSlash := cutLast(s, "/")
	a, err := netip.ParseAddr(addrText)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, f.errorf("not an IP address")
	}
	bits := -1
	switch {
	case hasSlash:
		n, ok := prefixFromMask(maskText, a.Is4())
		if !ok {
			return netip.Prefix{}, f.errorf("a bad prefix length")
		}
		bits = n
	case prefixKey.present():
		n, err := prefixKey.intIn("a prefix length", 0, a.BitLen())
		if err != nil {
			return netip.Prefix{}, err
		}
		bits = n
	case mask.present():
		ms, err := mask.scalar()
		if err != nil {
			return netip.Prefix{}, err
		}
		n, ok := prefixFromMask(ms, a.Is4())
		if !ok {
			return netip.Prefix{}, mask.errorf("not a netmask for the address")
		}
		bits = n
	case a.Is4():
		bits = 24
	default:
		bits = 64
	}
	return netip.PrefixFrom(a, bits), nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// defaultRoute is the route a gateway stands for.
func defaultRoute(gw netip.Addr, metric int) Route {
	to := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	if gw.Is6() {
		to = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	return Route{To: to, Via: gw, Metric: metric}
}

// checkFamily rejects a gateway of the other address family.
func checkFamily(f field, gw netip.Addr, want4 bool) error {
	if gw.Is4() != want4 {
		fam := "IPv6"
		if want4 {
			fam = "IPv4"
		}
		return f.errorf("not an %s address", fam)
	}
	return nil
}

// dedupeDNS drops repeated DNS servers and search domains, keeping the
// first of each: sources repeat them per subnet.
func (c *Config) dedupeDNS() {
	c.DNS.Nameservers = dedupe(c.DNS.Nameservers)
	c.DNS.Search = dedupe(c.DNS.Search)
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		ifc.DNS.Nameservers = dedupe(ifc.DNS.Nameservers)
		ifc.DNS.Search = dedupe(ifc.DNS.Search)
	}
}

package netcfg

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"

	"go.yaml.in/yaml/v3"

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
// Unknown keys are ignored (netplan has many); a value of the wrong type, a
// bad address or a missing required key is a *FieldError naming the field.
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty network configuration")
	}
	var doc any
	if err := yamlx.Check(data); err != nil {
		return nil, fmt.Errorf("network configuration: %w", err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("network configuration is not YAML or JSON: %w", err)
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
		c, err = parseV1(top)
	case 2:
		c, err = parseV2(top)
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
		return netip.Prefix{}, f.errorf("%q is not an IP address", s)
	}
	bits := -1
	switch {
	case hasSlash:
		n, ok := prefixFromMask(maskText, a.Is4())
		if !ok {
			return netip.Prefix{}, f.errorf("%q has a bad prefix length", s)
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
			return netip.Prefix{}, mask.errorf("%q is not a netmask for %s", ms, a)
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
		return f.errorf("%s is not an %s address", gw, fam)
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

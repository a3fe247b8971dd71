// Package nocloudline parses NoCloud's "line configuration", the
// ds=nocloud token on the kernel command line or in the SMBIOS system
// serial number (docs/cloud-init.md, "NoCloud"), for the NoCloud reader
// (package datasource) and the image checks (package image).
package nocloudline

import "strings"

// The rules are cloud-init's parse_cmdline_data and load_cmdline_data, read
// from the 22.4.2 source and the current one:
//
//   - the line (padded with a space at each end) must contain " ds=nocloud "
//     or " ds=nocloud;" (or the same with nocloud-net);
//   - the LAST space-separated token that begins with that ds= prefix is
//     used: its text after ";" is a list of key=value pairs separated by ";";
//   - s, i and h stand for seedfrom, instance-id and local-hostname; other
//     keys pass through as meta-data keys; a pair with no "=" gives the key
//     a null value; empty pairs are skipped;
//   - dsmode: an explicit dsmode= wins; else a seedfrom of http(s):// or
//     ftp(s):// means "net" and file:// or / means "local"; else ds=nocloud
//     means "local" and ds=nocloud-net means "net".
//
// ds=nocloud is tried before ds=nocloud-net, so with both tokens present
// ds=nocloud decides, as in cloud-init.

// dsIDs are the tokens, in the order cloud-init tries them, with the dsmode
// each implies.
var dsIDs = []struct{ id, dsmode string }{
	{"ds=nocloud", "local"},
	{"ds=nocloud-net", "net"},
}

var shortKeys = map[string]string{"s": "seedfrom", "i": "instance-id", "h": "local-hostname"}

// Parse reads NoCloud meta-data from a kernel command line or an
// SMBIOS serial number. found is false when the line has no ds=nocloud or
// ds=nocloud-net token. Values are strings, or nil for a key given without
// "=".
func Parse(line string) (meta map[string]any, found bool) {
	padded := " " + line + " "
	for _, d := range dsIDs {
		if !strings.Contains(padded, " "+d.id+" ") && !strings.Contains(padded, " "+d.id+";") {
			continue
		}
		var arg string
		for _, tok := range strings.Fields(padded) {
			if strings.HasPrefix(tok, d.id) {
				_, arg, _ = strings.Cut(tok, "=")
			}
		}
		meta = map[string]any{}
		_, pairs, _ := strings.Cut(arg, ";")
		if pairs != "" {
			for _, kv := range strings.Split(pairs, ";") {
				if kv == "" {
					continue
				}
				k, v, hasValue := strings.Cut(kv, "=")
				if long, ok := shortKeys[k]; ok {
					k = long
				}
				if hasValue {
					meta[k] = v
				} else {
					meta[k] = nil
				}
			}
		}
		if _, ok := meta["dsmode"]; !ok {
			meta["dsmode"] = d.dsmode
			if s, ok := meta["seedfrom"].(string); ok && s != "" {
				switch {
				case hasPrefixAny(s, "http://", "https://", "ftp://", "ftps://"):
					meta["dsmode"] = "net"
				case hasPrefixAny(s, "file://", "/"):
					meta["dsmode"] = "local"
				}
			}
		}
		return meta, true
	}
	return nil, false
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

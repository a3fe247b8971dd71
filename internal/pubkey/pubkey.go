// Package pubkey is the one filter of SSH public keys that the metadata
// readers (package datasource) and the seed writer (package seed) share:
// what can be written one per line into authorized_keys.
package pubkey

import (
	"fmt"
	"strings"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Bounds of the keys (datasource.MaxPublicKey and MaxPublicKeys).
const (
	// MaxKey bounds one SSH public key line (sshd's own limit on a key
	// blob is 16 KiB).
	MaxKey = 16 << 10
	// MaxKeys bounds all of them together.
	MaxKeys = 256 << 10
)

// Dropped is a public key Filter left out: its index in the
// keys given, and why (the error describes the key, never quotes it).
type Dropped struct {
	Index int
	Err   error
}

// Filter returns, in order, the SSH public keys that can be
// written one per line into authorized_keys (and into meta-data, from
// which cloud-init writes them there): each key trimmed of surrounding
// space. Blank entries are skipped without a word. A key longer than
// MaxKey, or with a control or line-separator character
// (netcfg.CheckLine; a TAB too: the readers turn one between fields into
// a space first), is left out, and so is every key that would take the
// kept keys beyond MaxKeys in all; dropped says which and why. It
// is the one filter the readers and the seed writer share.
func Filter(keys []string) (kept []string, dropped []Dropped) {
	total := 0
	for i, k := range keys {
		k = strings.TrimSpace(k)
		var err error
		switch {
		case k == "":
			continue
		case len(k) > MaxKey:
			err = fmt.Errorf("%d bytes long, more than %d", len(k), MaxKey)
		case total+len(k) > MaxKeys:
			err = fmt.Errorf("the keys before it already take %d bytes of %d", total, MaxKeys)
		default:
			err = netcfg.CheckLine(k)
		}
		if err != nil {
			dropped = append(dropped, Dropped{Index: i, Err: err})
			continue
		}
		total += len(k)
		kept = append(kept, k)
	}
	return kept, dropped
}

package yamlx

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Digest returns the SHA-256 of what n means, for telling a changed
// value from an unchanged one: every alias stands for its target, a
// mapping's keys are taken in a fixed order, and comments, quoting,
// layout and anchors are left out. It writes into the hash as it walks,
// so it costs the expanded size in time (which CheckExpanded bounds) and
// the nesting in memory; nothing of the expansion is built, unlike a
// decode and an encode, whose encoder keeps every event of the document.
func Digest(n *yaml.Node) [sha256.Size]byte {
	d := digester{h: sha256.New()}
	d.node(n, 0)
	var out [sha256.Size]byte
	d.h.Sum(out[:0])
	return out
}

type digester struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
	key *digester // reused for the digest of a scalar key
	tmp []byte    // what is written next, reused
}

func (d *digester) mark(c byte) {
	d.tmp = append(d.tmp[:0], c)
	d.h.Write(d.tmp)
}

func (d *digester) num(n int) {
	d.h.Write(binary.AppendUvarint(d.buf[:0], uint64(n)))
}

func (d *digester) text(s string) {
	d.num(len(s))
	d.tmp = append(d.tmp[:0], s...)
	d.h.Write(d.tmp)
}

// node writes n. An alias cycle (which CheckExpanded refuses) ends at
// maxDepth instead of running on.
func (d *digester) node(n *yaml.Node, depth int) {
	if n == nil || depth > maxDepth {
		d.mark(0)
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		d.node(n.Alias, depth+1)
	case yaml.DocumentNode:
		d.mark('D')
		d.num(len(n.Content))
		for _, c := range n.Content {
			d.node(c, depth+1)
		}
	case yaml.ScalarNode:
		// The resolved tag tells "1" from 1, and an empty value from
		// null; the text is the value's.
		d.mark('S')
		d.text(n.ShortTag())
		d.text(n.Value)
	case yaml.SequenceNode:
		d.mark('L')
		d.num(len(n.Content))
		for _, c := range n.Content {
			d.node(c, depth+1)
		}
	case yaml.MappingNode:
		// The pairs in the order of their keys' digests: a mapping
		// whose keys were reordered means the same.
		type pair struct {
			key [sha256.Size]byte
			val *yaml.Node
		}
		pairs := make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := d.key
			if kn := n.Content[i]; kn.Kind != yaml.ScalarNode || k == nil {
				// A collection as a key nests its own keys: its own hash.
				k = &digester{h: sha256.New()}
				if kn.Kind == yaml.ScalarNode {
					d.key = k
				}
			}
			k.h.Reset()
			k.node(n.Content[i], depth+1)
			var p pair
			k.h.Sum(p.key[:0])
			p.val = n.Content[i+1]
			pairs = append(pairs, p)
		}
		slices.SortStableFunc(pairs, func(a, b pair) int { return bytes.Compare(a.key[:], b.key[:]) })
		d.mark('M')
		d.num(len(pairs))
		for _, p := range pairs {
			d.h.Write(p.key[:])
			d.node(p.val, depth+1)
		}
	default:
		d.mark('?')
	}
}

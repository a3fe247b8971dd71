package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// NetOptions say how much of the network-parser matrix to run.
type NetOptions struct {
	// Root is the module's root directory: the inputs are the fixtures
	// under testdata/netcfg and the fuzz corpora under
	// netcfg/testdata/fuzz.
	Root string
	// Mutations is the number of mutants made of each input.
	Mutations int
	Seed      uint64
	// Deadline bounds one parse (default 2s).
	Deadline time.Duration
	Logf     func(format string, args ...any)
}

// smartosInput is one call of netcfg.FromSmartOS.
type smartosInput struct {
	nics, routes, resolvers []byte
	domain                  string
}

// RunNetMatrix feeds the network parsers (netcfg.Parse for cloud-init v1
// and v2, netcfg.FromSmartOS for sdc:nics) every fixture and fuzz-corpus
// entry and o.Mutations deterministic mutants of each, and counts clean
// accepts, clean rejections, panics and hangs. An accepted configuration
// must also survive MarshalV1 and a second Parse; one that does not is
// counted as wrong.
func RunNetMatrix(ctx context.Context, o NetOptions) ([]*Row, error) {
	o.Deadline = cmpOr(o.Deadline, 2*time.Second)
	docs, err := netDocs(o.Root)
	if err != nil {
		return nil, err
	}
	sdc, err := smartosInputs(o.Root)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x6e6574))
	parse := &Row{Area: "netcfg", Case: fmt.Sprintf("%d fixtures + %d mutants each", len(docs), o.Mutations), Client: "Parse (v1/v2)"}
	for _, d := range docs {
		for i := 0; i <= o.Mutations; i++ {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			in := d
			if i > 0 {
				in = mutate(r, d)
			}
			netRun(parse, o.Deadline, in, func() (*netcfg.Config, error) { return netcfg.Parse(in) })
		}
	}
	smart := &Row{Area: "netcfg", Case: fmt.Sprintf("%d fixtures and corpus entries + %d mutants each", len(sdc), o.Mutations), Client: "FromSmartOS"}
	for _, s := range sdc {
		for i := 0; i <= o.Mutations; i++ {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			in := s
			if i > 0 {
				switch r.IntN(4) { // one key at a time, so most mutants stay near-valid
				case 0:
					in.nics = mutate(r, s.nics)
				case 1:
					in.routes = mutate(r, s.routes)
				case 2:
					in.resolvers = mutate(r, s.resolvers)
				default:
					in.domain = string(mutate(r, []byte(s.domain)))
				}
			}
			netRun(smart, o.Deadline, []byte(fmt.Sprintf("%q %q %q %q", in.nics, in.routes, in.resolvers, in.domain)),
				func() (*netcfg.Config, error) { return netcfg.FromSmartOS(in.nics, in.routes, in.resolvers, in.domain) })
		}
	}
	for _, row := range []*Row{parse, smart} {
		if o.Logf != nil {
			o.Logf("%s", row)
		}
	}
	return []*Row{parse, smart}, nil
}

func netRun(row *Row, deadline time.Duration, input []byte, f func() (*netcfg.Config, error)) {
	var bad string
	err, p, hung, took := guarded(deadline, func() error {
		c, err := f()
		if err != nil {
			return err
		}
		out, err := c.MarshalV1()
		if err != nil {
			bad = fmt.Sprintf("accepted, but MarshalV1 fails: %v", err)
			return nil
		}
		if _, err := netcfg.Parse(out); err != nil {
			bad = fmt.Sprintf("accepted, but its v1 form does not parse: %v", err)
		}
		return nil
	})
	row.Runs++
	row.Time = append(row.Time, took)
	switch {
	case hung:
		row.Hangs++
		row.note("parse still running after %s on %q", deadline, clip(input))
	case p != nil:
		row.Panics++
		row.note("panic %v on %q", p, clip(input))
	case err != nil:
		row.CorrectErr++
	case bad != "":
		row.Wrong++
		row.note("%s; input %q", bad, clip(input))
	default:
		row.Correct++
	}
}

func clip(b []byte) []byte {
	if len(b) > 160 {
		return b[:160]
	}
	return b
}

// tokens are inserted by mutate: YAML and JSON syntax that parsers trip on.
var tokens = []string{"{", "}", "[", "]", ":", "- ", "\n", "  ", "'", "\"", "&a", "*a", "!!binary ", "null", "0x", "-1",
	"99999999999999999999", "::", "/129", "\x00", "\xff", "version: 2", "type: bond", "\"ips\":", "\"primary\":true"}

// mutate returns a deterministic variant of b: bytes flipped, a token
// inserted, a span cut or duplicated, or the end cut off.
func mutate(r *rand.Rand, b []byte) []byte {
	out := bytes.Clone(b)
	for range 1 + r.IntN(3) {
		n := len(out)
		switch k := r.IntN(5); {
		case n == 0 || k == 0:
			i := r.IntN(n + 1)
			out = slices.Insert(out, i, []byte(tokens[r.IntN(len(tokens))])...)
		case k == 1:
			out[r.IntN(n)] ^= byte(1 + r.IntN(255))
		case k == 2:
			i := r.IntN(n)
			j := i + r.IntN(min(16, n-i)+1)
			out = slices.Delete(out, i, j)
		case k == 3:
			i := r.IntN(n)
			j := i + r.IntN(min(32, n-i)+1)
			out = slices.Insert(out, j, slices.Clone(out[i:j])...)
		default:
			out = out[:r.IntN(n)]
		}
	}
	return out
}

// netDocs returns the v1/v2 documents under testdata/netcfg (every
// .yaml and .json file but the sdc ones).
func netDocs(root string) ([][]byte, error) {
	var docs [][]byte
	err := filepath.WalkDir(filepath.Join(root, "testdata", "netcfg"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".yaml" && ext != ".json") || strings.Contains(p, string(filepath.Separator)+"sdc"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		docs = append(docs, b)
		return err
	})
	if err == nil && len(docs) == 0 {
		err = fmt.Errorf("no network configurations under %s/testdata/netcfg", root)
	}
	return docs, err
}

// smartosInputs returns the sdc fixtures of testdata/netcfg/sdc and the
// entries of the FromSmartOS fuzz corpus.
func smartosInputs(root string) ([]smartosInput, error) {
	var ins []smartosInput
	fx, _ := filepath.Glob(filepath.Join(root, "testdata", "netcfg", "sdc", "*.json"))
	for _, p := range fx {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var sc struct {
			Nics      json.RawMessage `json:"nics"`
			Routes    json.RawMessage `json:"routes"`
			Resolvers json.RawMessage `json:"resolvers"`
			DNSDomain string          `json:"dns_domain"`
		}
		if err := json.Unmarshal(b, &sc); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		ins = append(ins, smartosInput{sc.Nics, sc.Routes, sc.Resolvers, sc.DNSDomain})
	}
	corpus, _ := filepath.Glob(filepath.Join(root, "netcfg", "testdata", "fuzz", "FuzzFromSmartOS", "*"))
	for _, p := range corpus {
		vals, err := readCorpusEntry(p)
		if err != nil {
			return nil, err
		}
		if len(vals) != 4 {
			return nil, fmt.Errorf("%s: %d values, want 4", p, len(vals))
		}
		ins = append(ins, smartosInput{vals[0], vals[1], vals[2], string(vals[3])})
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("no sdc:nics inputs under %s", root)
	}
	return ins, nil
}

// readCorpusEntry reads a "go test fuzz v1" file of []byte and string
// values.
func readCorpusEntry(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("%s: not a go test fuzz v1 file", path)
	}
	var vals [][]byte
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		lit, ok := strings.CutPrefix(l, "[]byte(")
		if !ok {
			lit, ok = strings.CutPrefix(l, "string(")
		}
		lit, ok2 := strings.CutSuffix(lit, ")")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%s: unsupported value %q", path, l)
		}
		s, err := strconv.Unquote(lit)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, l, err)
		}
		vals = append(vals, []byte(s))
	}
	return vals, nil
}

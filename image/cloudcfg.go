package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// Paths of cloud-init's system configuration.
const (
	CloudCfg  = paths.CloudCfg
	CloudCfgD = paths.CloudCfgD
	// DropIn is the drop-in the package ships.
	DropIn = paths.DropIn
)

// maxCfgSize bounds one configuration file read.
const maxCfgSize = 1 << 20

// cfgFile is one file of cloud-init's system configuration.
type cfgFile struct {
	Path string         // system path
	Doc  map[string]any // nil when Err is set
	Err  error          // the file cannot be read or parsed; cloud-init skips it
}

// cloudConfig is cloud-init's system configuration in the order cloud-init
// merges it: cloud.cfg, then every *.cfg in cloud.cfg.d that is a regular
// file (links followed, inside the root), in byte order of the names. A
// later file wins key by key: mappings merge, any other value (a list, a
// string, null) replaces the earlier one.
type cloudConfig []cfgFile

// The files are bounded together twice: what is read (bytes and files,
// fsutil.CloudConfigBudget: past it, the configuration cannot be judged
// and that is an error) and what it holds (values and text as one
// document, yamlx.Budget: a file past what the ones before it left is an
// error of that file, read no further than the budget).
func readCloudConfig(root sysroot.Root) (cloudConfig, error) {
	b := fsutil.CloudConfigBudget()
	var cc cloudConfig
	budget := yamlx.NewBudget()
	if f, ok := readCfgFile(root, b, CloudCfg, budget); ok {
		if errors.Is(f.Err, fsutil.ErrOverBudget) {
			return cc, f.Err
		}
		cc = append(cc, f)
	}
	ents, err := fsutil.ReadDirIn(string(root), CloudCfgD)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cc, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cfg") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // byte order, as Python's sorted() on names
	for _, n := range names {
		if f, ok := readCfgFile(root, b, path.Join(CloudCfgD, n), budget); ok {
			if errors.Is(f.Err, fsutil.ErrOverBudget) {
				return cc, f.Err
			}
			cc = append(cc, f)
		}
	}
	return cc, nil
}

// readCfgFile reads one file within b (bytes and files read) and budget
// (the values they hold); ok is false when cloud-init would not see a
// regular file there.
func readCfgFile(root sysroot.Root, b *fsutil.Budget, sys string, budget *yamlx.Budget) (cfgFile, bool) {
	f := cfgFile{Path: sys}
	fi, err := fsutil.StatIn(string(root), sys, true)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, false
	case err != nil:
		f.Err = err
		return f, true
	case !fi.Mode().IsRegular():
		return f, false
	}
	data, err := b.ReadFileIn(context.Background(), string(root), sys, min(maxCfgSize, budget.ReadLimit()))
	switch {
	case errors.Is(err, fsutil.ErrTooLarge) && maxCfgSize > budget.ReadLimit():
		f.Err = fmt.Errorf("%w: cloud.cfg and cloud.cfg.d together are more than %d bytes", yamlx.ErrTooLarge, yamlx.MaxExpandedText)
	case err != nil:
		f.Err = err
	default:
		f.Doc, f.Err = parseCloudConfig(data, budget)
	}
	return f, true
}

// parseCloudConfig parses one configuration file as cloud-init does: a
// YAML mapping, or nothing. Errors say where, never quote the input.
func parseCloudConfig(data []byte, budget *yamlx.Budget) (map[string]any, error) {
	var n yaml.Node
	if err := budget.Unmarshal(data, &n); err != nil {
		if errors.Is(err, yamlx.ErrTooComplex) || errors.Is(err, yamlx.ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("not valid YAML: %w", yamlx.Describe(err))
	}
	if n.Kind == 0 || len(n.Content) == 0 {
		return map[string]any{}, nil
	}
	top := n.Content[0]
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the top level is not a mapping", top.Line)
	}
	var doc map[string]any
	if err := top.Decode(&doc); err != nil {
		return nil, fmt.Errorf("cannot be decoded: %w", yamlx.Describe(err))
	}
	return doc, nil
}

// setting is the value in force for one key path and the file it comes from.
type setting struct {
	Key   string // dotted: "network.config"
	File  string // "" when no file sets it
	Value any
}

// Set reports whether some file sets the key.
func (s setting) Set() bool { return s.File != "" }

// lookup returns the value of keys in cloud-init's merged configuration
// and the file that set it: the last file in which every key on the way is
// a mapping and the last key is present.
func (cc cloudConfig) lookup(keys ...string) setting {
	s := setting{Key: strings.Join(keys, ".")}
	for _, f := range cc {
		if v, ok := dig(f.Doc, keys); ok {
			s.File, s.Value = f.Path, v
		}
	}
	return s
}

func dig(doc map[string]any, keys []string) (any, bool) {
	var cur any = doc
	for i, k := range keys {
		if cur == nil && i > 0 {
			return nil, true // a null on the way replaces the mapping
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// merged returns the value of keys with mappings merged across files,
// later files winning, as cloud-init merges them.
func (cc cloudConfig) merged(keys ...string) any {
	var v any
	for _, f := range cc {
		if x, ok := dig(f.Doc, keys); ok {
			v = mergeValues(v, x)
		}
	}
	return v
}

func mergeValues(old, new any) any {
	om, ok1 := old.(map[string]any)
	nm, ok2 := new.(map[string]any)
	if !ok1 || !ok2 {
		return new
	}
	out := make(map[string]any, len(om)+len(nm))
	for k, v := range om {
		out[k] = v
	}
	for k, v := range nm {
		out[k] = mergeValues(out[k], v)
	}
	return out
}

// unparsable lists the files cloud-init would skip, with why.
func (cc cloudConfig) unparsable() []string {
	var out []string
	for _, f := range cc {
		if f.Err != nil {
			out = append(out, f.Path+": "+f.Err.Error())
		}
	}
	return out
}

// customMerge lists the files that choose their own merge rules
// (merge_how, merge_type), for which lookup's answer may be wrong.
func (cc cloudConfig) customMerge() []string {
	var out []string
	for _, f := range cc {
		for _, k := range []string{"merge_how", "merge_type"} {
			if _, ok := f.Doc[k]; ok {
				out = append(out, f.Path)
				break
			}
		}
	}
	return out
}

// logFiles returns the log files "cloud-init clean --logs" removes, as
// cloud-init 22.4 finds them (util.get_config_logfiles): def_log_file
// (default /var/log/cloud-init.log) and the files output.all sends stdout
// and stderr to ("| tee -a FILE", ">> FILE", "> FILE", or a bare FILE,
// which means ">> FILE"). Like cloud-init, it ignores output.init,
// output.config and output.final.
func (cc cloudConfig) logFiles() []string {
	logs := []string{paths.CloudInitLog}
	if s := cc.lookup("def_log_file"); s.Set() {
		logs = logs[:0]
		if v, ok := s.Value.(string); ok && v != "" {
			logs = append(logs, v)
		}
	}
	var out, errOut any
	if m, ok := cc.merged("output").(map[string]any); ok {
		switch all := m["all"].(type) {
		case string:
			out, errOut = all, all
		case []any:
			if len(all) > 0 {
				out = all[0]
			}
			if len(all) > 1 {
				errOut = all[1]
			}
		case map[string]any:
			out, errOut = all["output"], all["error"]
		}
	}
	if errOut == "&1" {
		errOut = out
	}
	for _, v := range []any{out, errOut} {
		t, ok := v.(string)
		if !ok || t == "" {
			continue
		}
		t = strings.TrimLeft(t, " \t\n\r\v\f")
		if !strings.HasPrefix(t, ">") && !strings.HasPrefix(t, "|") {
			t = ">> " + t
		}
		m := outputTarget.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		parts := strings.Fields(m[1])
		switch {
		case len(parts) == 1:
			logs = append(logs, parts[0])
		case len(parts) >= 3 && parts[0] == "tee" && parts[1] == "-a":
			logs = append(logs, parts[2])
		}
	}
	var abs []string
	for _, l := range logs {
		if path.IsAbs(l) {
			abs = append(abs, path.Clean(l))
		}
	}
	slices.Sort(abs)
	return slices.Compact(abs)
}

// outputTarget is cloud-init's pattern for an output setting.
var outputTarget = regexp.MustCompile(`^(?:\||>+)\s*(.*)`)

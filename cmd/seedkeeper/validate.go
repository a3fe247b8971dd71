package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/hotplug"
	"github.com/seedkeeper/seedkeeper/intent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

var validateHelp = `Usage: seedkeeper validate [--kind KIND] [--json] FILE...

Checks each FILE strictly, before it ships: every part that boot would
leave out with a note, or refuse, is an error here. Each error is printed
as FILE:LINE:COL: what is wrong (the field, never its value); every error
is told, not only the first. A file without errors prints "FILE: valid
KIND".

The kind of each file is told from its content, or its name where the
content cannot tell (meta-data, user-data, network-config,
seedkeeper's config.yaml); --kind forces one for every FILE:

  network     cloud-init network config v1 or v2, wrapped in "network:"
              or not (netcfg's parser, as boot reads network-config)
  smartos     SmartOS network metadata: the list of sdc:nics, or a
              mapping of sdc:nics, sdc:routes, sdc:resolvers, sdc:dns_domain
  meta-data   a NoCloud meta-data document (read as boot reads a seed;
              a seedfrom is checked for its kind, not followed)
  user-data   a #cloud-config user-data: the settings seedkeeper
              carries to a kept instance (ssh_authorized_keys, users,
              password, chpasswd)
  config      seedkeeper's configuration file, /etc/seedkeeper/config.yaml

--json prints one object: schema_version, and files, each with file,
kind, valid and errors (each with line, column, path and message).

Exit status: 0 every file is valid, 1 an error in a file, 2 a file that
cannot be read or whose kind cannot be told, 3 usage.
`

// validateKinds are the kinds of document validate checks, by name.
var validateKinds = map[string]func(data []byte) []validateError{
	"network":   func(b []byte) []validateError { return fromNetcfg(netcfg.Check(b)) },
	"smartos":   func(b []byte) []validateError { return fromNetcfg(netcfg.CheckSmartOS(b)) },
	"meta-data": checkMetaData,
	"user-data": checkUserData,
	"config":    checkConfig,
}

// validateSchemaVersion is the version of validate's --json output.
const validateSchemaVersion = 1

// validateError is one error in a file.
type validateError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

type validateFile struct {
	File   string          `json:"file"`
	Kind   string          `json:"kind,omitempty"`
	Valid  bool            `json:"valid"`
	Errors []validateError `json:"errors"`
	// failed: the file could not be read or its kind told (exit 2).
	failed bool
}

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate")
	kind := fs.String("kind", "", "")
	asJSON := fs.Bool("json", false, "")
	// Flags may come before or after the files.
	var files []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, validateHelp)
				return exitOK
			}
			fmt.Fprintln(stderr, flagError(fs, fs.Name(), err))
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "seedkeeper validate: no FILE given")
		return exitUsage
	}
	if _, ok := validateKinds[*kind]; *kind != "" && !ok {
		fmt.Fprintf(stderr, "seedkeeper validate: --kind: want one of %s\n", strings.Join(slices.Sorted(maps.Keys(validateKinds)), ", "))
		return exitUsage
	}
	failed, invalid := false, false
	var results []validateFile
	for _, f := range files {
		r := validateOne(f, *kind)
		failed, invalid = failed || r.failed, invalid || !r.Valid
		results = append(results, r)
	}
	code := validateExit(failed, invalid)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			SchemaVersion int            `json:"schema_version"`
			Files         []validateFile `json:"files"`
		}{validateSchemaVersion, results})
		return code
	}
	for _, r := range results {
		if r.Valid {
			fmt.Fprintf(stdout, "%s: valid %s\n", r.File, r.Kind)
			continue
		}
		for _, e := range r.Errors {
			fmt.Fprintf(stdout, "%s:%d:%d: %s\n", r.File, e.Line, e.Column, e.Message)
		}
	}
	return code
}

// validateOne reads and checks one file.
func validateOne(file, kind string) validateFile {
	r := validateFile{File: file, Errors: []validateError{}}
	fail := func(msg string) validateFile {
		r.failed = true
		r.Errors = append(r.Errors, validateError{Line: 1, Column: 1, Message: msg})
		return r
	}
	// The one bounded reader; no document seedkeeper reads is larger.
	data, err := fsutil.ReadFile(context.Background(), file, yamlx.MaxDocument)
	if err != nil {
		return fail(err.Error())
	}
	if kind == "" {
		if kind, err = detectKind(file, data); err != nil {
			return fail(err.Error())
		}
	}
	r.Kind = kind
	errs := validateKinds[kind](data)
	slices.SortStableFunc(errs, func(a, b validateError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	r.Errors = append(r.Errors, errs...)
	r.Valid = len(r.Errors) == 0
	return r
}

// metaDataKeys are keys only a meta-data document has.
var metaDataKeys = []string{"instance-id", "local-hostname", "public-keys", "dsmode", "seedfrom"}

// detectKind tells what kind of document data is: by its content where
// that says (a #cloud-config header, a network config's version, SmartOS
// keys, only the configuration file's keys), else by the file's name.
func detectKind(file string, data []byte) (string, error) {
	base := filepath.Base(file)
	first, _, _ := strings.Cut(string(data), "\n")
	switch {
	case strings.HasPrefix(first, "#cloud-") || strings.HasPrefix(first, "#!") || base == "user-data" || base == "vendor-data":
		return "user-data", nil
	case base == "meta-data":
		return "meta-data", nil
	case base == "network-config":
		return "network", nil
	}
	var doc yaml.Node
	if yamlx.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 {
		top := doc.Content[0]
		var keys []string
		if top.Kind == yaml.MappingNode {
			for i := 0; i < len(top.Content); i += 2 {
				keys = append(keys, top.Content[i].Value)
			}
		}
		network, _ := yamlx.Locate(top, "network")
		switch {
		case top.Kind == yaml.SequenceNode && len(top.Content) > 0 && (yamlx.KeyNode(top.Content[0], "mac") != nil || yamlx.KeyNode(top.Content[0], "interface") != nil),
			slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "sdc:") }):
			return "smartos", nil
		case slices.Contains(keys, "version") || network != top && network.Kind == yaml.MappingNode && slices.ContainsFunc(network.Content, isNetworkTopKey):
			return "network", nil
		case slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(metaDataKeys, k) }):
			return "meta-data", nil
		case slices.ContainsFunc(keys, func(k string) bool { return k != "network" && slices.Contains(config.TopKeys(), k) }),
			slices.Equal(keys, []string{"network"}) && yamlx.KeyNode(network, "owner") != nil:
			return "config", nil
		}
	}
	if base == "config.yaml" && filepath.Base(filepath.Dir(file)) == "seedkeeper" {
		return "config", nil
	}
	return "", errors.New("cannot tell what kind of document this is: give --kind")
}

// isNetworkTopKey reports whether k is a key of a network config's top
// level (version, config, or a v2 section: netcfg's key table).
func isNetworkTopKey(k *yaml.Node) bool {
	if k.Value == "version" || k.Value == "config" {
		return true
	}
	key := netcfg.LookupKey(2, "network", k.Value)
	return key != nil
}

func fromNetcfg(ps []netcfg.Problem) []validateError {
	out := []validateError{}
	for _, p := range ps {
		out = append(out, validateError{p.Line, p.Column, p.Path, p.Msg})
	}
	return out
}

// checkConfig checks seedkeeper's configuration file as boot loads it,
// and its hotplug.drivers as the hotplug allowlist reads it.
func checkConfig(data []byte) []validateError {
	_, ps := config.Read(data, datasource.Names())
	out := []validateError{}
	for _, p := range ps {
		out = append(out, validateError{p.Line, p.Column, p.Path, p.Msg})
	}
	var doc yaml.Node
	if yamlx.Unmarshal(data, &doc) != nil {
		return out
	}
	n, ok := yamlx.Locate(&doc, "hotplug.drivers")
	if !ok || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return out
	}
	var v any
	err := n.Decode(&v)
	a := hotplug.ResolveAllowlist(hotplug.Setting{}, hotplug.Setting{Set: true, Value: v, Err: err}, "")
	if why := a.Reason(); why != "" {
		out = append(out, validateError{n.Line, n.Column, "hotplug.drivers", why})
	}
	return out
}

// lineRef is how the user-data and meta-data readers name a line.
var lineRef = regexp.MustCompile(`line (\d+)`)

// checkUserData checks a #cloud-config user-data as boot reads it for
// the settings it carries to a kept instance: each warning of the reader
// is an error, at the line it names.
func checkUserData(data []byte) []validateError {
	first, _, _ := strings.Cut(string(data), "\n")
	if strings.TrimRight(first, " \t\r") != "#cloud-config" {
		return []validateError{{Line: 1, Column: 1, Message: "user-data: not a #cloud-config document (its first line is not #cloud-config): seedkeeper reads nothing in it"}}
	}
	cc := intent.ParseCloudConfig(data)
	var doc yaml.Node
	_ = yamlx.Unmarshal(data, &doc) // positions only; the reader said what is wrong
	out := []validateError{}
	for _, w := range cc.Warnings {
		e := locateMessage(&doc, "user-data ", w)
		if m := lineRef.FindStringSubmatch(w); m != nil && e.Path == "" {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column = firstColumn(&doc, e.Line)
		}
		out = append(out, e)
	}
	return out
}

// locateMessage places a reader's message that starts with prefix and a
// field ("meta-data public-keys[1] dropped: ...") at that field in doc,
// or at its top-level key, or at the document's start.
func locateMessage(doc *yaml.Node, prefix, msg string) validateError {
	top := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		top = doc.Content[0]
	}
	e := validateError{Line: max(top.Line, 1), Column: max(top.Column, 1), Message: msg}
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		return e
	}
	path := rest[:strings.IndexAny(rest+" ", " :")]
	if n, found := yamlx.Locate(top, path); found {
		e.Line, e.Column, e.Path = n.Line, n.Column, path
	} else if k := yamlx.KeyNode(top, path[:strings.IndexAny(path+".[", ".[")]); k != nil {
		e.Line, e.Column = k.Line, k.Column
	}
	return e
}

// firstColumn is the column of the first node that starts on line, 1 when
// none does.
func firstColumn(n *yaml.Node, line int) int {
	best := 0
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Line == line && n.Kind != yaml.DocumentNode && (best == 0 || n.Column < best) {
			best = n.Column
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return max(best, 1)
}

// checkMetaData reads a NoCloud meta-data document as boot reads a seed
// (in a scratch root that holds only it, so nothing of this machine is
// read), and turns every warning of the read into an error, placed at the
// key it names. A seedfrom is checked for its kind, not followed.
func checkMetaData(data []byte) []validateError {
	var doc yaml.Node
	top := &doc
	if yamlx.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 {
		top = doc.Content[0]
	}
	out := []validateError{}
	at := func(msg string) validateError { return locateMessage(top, "meta-data ", msg) }
	seed := data
	if k := yamlx.KeyNode(top, "seedfrom"); k != nil {
		v, _ := yamlx.Locate(top, "seedfrom")
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
			out = append(out, validateError{v.Line, v.Column, "seedfrom", "meta-data seedfrom: want a URL or path, got " + yamlx.NodeKind(v)})
		}
		// Not followed: the rest is read as it stands.
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i] == k {
				top.Content = slices.Delete(slices.Clone(top.Content), i, i+2)
				break
			}
		}
		// Encoded again without it: within what an encoder may be
		// given (yamlx.MaxEncodeValues), or checked no further.
		if ext, err := yamlx.Measure(top); err != nil || ext.Nodes > yamlx.MaxEncodeValues {
			return append(out, validateError{Line: 1, Column: 1, Message: fmt.Sprintf("meta-data: more than %d values beside a seedfrom: not checked further", yamlx.MaxEncodeValues)})
		}
		seed, _ = yaml.Marshal(top)
		top = doc.Content[0]
	}
	root, err := os.MkdirTemp("", "seedkeeper-validate-")
	if err != nil {
		return append(out, validateError{Line: 1, Column: 1, Message: err.Error()})
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, paths.SeedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return append(out, validateError{Line: 1, Column: 1, Message: err.Error()})
	}
	os.WriteFile(filepath.Join(dir, "meta-data"), seed, 0o600)
	os.WriteFile(filepath.Join(dir, "user-data"), []byte("#cloud-config\n"), 0o600)
	var warnings warnCollector
	md, err := datasource.Read(context.Background(), datasource.SourceNoCloud, datasource.Options{Root: root, Logger: slog.New(&warnings)})
	for _, w := range warnings {
		out = append(out, at(w))
	}
	switch {
	case err != nil:
		// The read names the scratch seed's files by their system path.
		msg := strings.ReplaceAll(err.Error(), paths.SeedDir+"/", "")
		if errors.Is(err, datasource.ErrNoSource) {
			msg = "meta-data dsmode is disabled: boot finds no source here"
		}
		out = append(out, at(msg))
	case md.InstanceIDDefaulted:
		if k := yamlx.KeyNode(top, "instance-id"); k == nil {
			out = append(out, at("meta-data has no instance-id: boot uses cloud-init's default, nocloud, which every VM of this seed shares"))
		}
	}
	return out
}

// warnCollector is a slog handler that keeps the messages of warnings
// and errors, with their attributes (which never hold a value).
type warnCollector []string

func (w *warnCollector) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnCollector) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += fmt.Sprintf(" (%s: %v)", a.Key, a.Value)
		return true
	})
	*w = append(*w, msg)
	return nil
}

func (w *warnCollector) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCollector) WithGroup(string) slog.Handler      { return w }

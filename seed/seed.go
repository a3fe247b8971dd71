package seed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/pubkey"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// System paths seed writes (resolve them with sysroot.Root.Path).
const (
	// Dir is cloud-init's NoCloud seed directory.
	Dir = paths.SeedDir
	// MarkerName is the marker file in Dir.
	MarkerName = ".seedkeeper"
	// ImportDir holds a seed a person put into Dir before seedkeeper
	// first ran.
	ImportDir = paths.ImportedSeed
	// PerBootDir is cloud-init's per-boot scripts directory.
	PerBootDir = paths.PerBootDir
	// OperatorScript and UserScript are the SmartOS scripts, named so that
	// the operator's runs first.
	OperatorScript = PerBootDir + "/00-seedkeeper-operator-script"
	UserScript     = PerBootDir + "/01-seedkeeper-user-script"
	// LegacyUserData is where SmartOS's legacy user-data key goes.
	LegacyUserData = "/var/db/mdata-user-data"
)

// The files in Dir.
const (
	MetaDataFile      = "meta-data"
	UserDataFile      = "user-data"
	VendorDataFile    = "vendor-data"
	NetworkConfigFile = "network-config"
)

var seedFiles = []string{MetaDataFile, UserDataFile, VendorDataFile, NetworkConfigFile}

// Seed is what cloud-init is handed.
type Seed struct {
	// InstanceID is the decided instance ID. Required.
	InstanceID string
	Hostname   string
	PublicKeys []string
	// UserData and VendorData are written as given; nil writes an empty
	// file.
	UserData   []byte
	VendorData []byte
	// NetworkConfig is a cloud-init network config (v1 or v2) to hand
	// cloud-init. Set it only when cloud-init owns the network; nil means
	// no network-config file (one written before is removed).
	NetworkConfig []byte
	// SmartOS holds the SmartOS extras; nil removes any written before.
	SmartOS *datasource.SmartOSExtras
}

// FromMetadata builds the Seed for md with the decided instance ID. It
// leaves NetworkConfig nil: set it when cloud-init owns the network.
func FromMetadata(md *datasource.Metadata, instanceID string) Seed {
	return Seed{
		InstanceID: instanceID,
		Hostname:   md.Hostname,
		PublicKeys: md.PublicKeys,
		UserData:   md.UserData,
		VendorData: md.VendorData,
		SmartOS:    md.SmartOS,
	}
}

// Result says what Write did. Paths are system paths.
type Result struct {
	// Dir is the seed directory.
	Dir string
	// Written and Removed list the files that changed.
	Written []string
	Removed []string
	// Imported is set on the one run that imported a person's seed, to
	// the directory it was copied to.
	Imported string
	// Warnings are things a person should know: hand-edited files that
	// were overwritten or removed, an unreadable marker.
	Warnings []string
}

// Changed reports whether Write changed any file.
func (r Result) Changed() bool { return len(r.Written) > 0 || len(r.Removed) > 0 }

type file struct {
	path string // system path
	data []byte
	perm fs.FileMode
}

// Write brings the seed directory and the SmartOS extras under rootDir (a
// directory standing for "/"; "" is the machine's own) to s: it plans
// (Plan) and applies exactly that plan. See the package documentation for
// files, modes and ownership.
func Write(rootDir string, s Seed) (Result, error) {
	p, err := PlanWrite(rootDir, s)
	if err != nil {
		return Result{Dir: Dir}, err
	}
	return p.Apply()
}

// Plan is what Write does: PlanWrite decides it from what is on disk,
// changing nothing, and Apply carries out exactly that.
type Plan struct {
	// Root is the directory standing for "/".
	Root sysroot.Root
	// Writes are the files Apply writes (their content or mode is not
	// what the seed asks for), Removes the files it removes; system
	// paths, in the order Apply acts on them.
	Writes  []string
	Removes []string
	// Import is set when Apply first copies a person's seed in Dir to
	// ImportDir (the one run that finds Dir without a marker).
	Import bool
	// Warnings are what Apply reports in Result.Warnings.
	Warnings []string

	write       []file
	importNames []string // the files of a person's seed to import
	claim       bool     // Dir has no marker: write an empty one first
	fixDir      bool     // Dir is absent or its mode is not 0700
	tempFiles   []string // system paths of temporaries a killed run left
	tempDirs    []string
	markers     bool    // the marker changes: pending first, final last
	pending     *marker // what the marker says while the files change
	final       *marker // what it says once they have
}

// Empty reports whether Apply has nothing to do: no file to write or
// remove, no marker to change, no directory mode to set back and no
// temporary of a killed run to clean up.
func (p *Plan) Empty() bool {
	return !p.markers && !p.claim && !p.Import && !p.fixDir && len(p.tempFiles) == 0 && len(p.tempDirs) == 0
}

// PlanWrite reads the seed directory and the SmartOS extras under rootDir
// (the marker, a person's seed to import, the files there now) and
// decides every write and removal that brings them to s. It changes
// nothing; Apply carries the plan out.
func PlanWrite(rootDir string, s Seed) (*Plan, error) {
	root := sysroot.Root(rootDir)
	p := &Plan{Root: root}
	want, warnings, err := filesWarn(s)
	if err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, warnings...)
	if err := confined(root, "writing the seed"); err != nil {
		return nil, err
	}
	dir := root.Path(Dir)
	if err := fsutil.NotLinked(dir); err != nil {
		return nil, err
	}
	if fi, err := fsutil.StatIn(string(root), Dir, false); err != nil || fi.Mode().Perm() != 0o700 {
		p.fixDir = true
	}
	p.tempFiles, p.tempDirs = temps(root)

	mk, owned, err := readMarker(root)
	if err != nil {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%v; treating %s as seedkeeper's", err, Dir))
		mk, owned = &marker{}, true
	}
	if !owned {
		names, err := importable(root)
		if err != nil {
			return nil, err
		}
		p.Import, p.importNames = names != nil, names
		p.claim = true
	}

	// What to write and what to remove.
	wantSum := map[string]string{}
	for _, f := range want {
		wantSum[f.path] = sum(f.data)
	}
	var stale []string
	for _, name := range seedFiles {
		sp := filepath.Join(Dir, name)
		if _, ok := wantSum[sp]; !ok && existsIn(root, sp) {
			stale = append(stale, sp)
		}
	}
	for _, sp := range slices.Sorted(maps.Keys(mk.Files)) {
		if !managed(sp) {
			// The marker is a file on disk: a path it lists is deleted
			// only when it is one seedkeeper writes.
			p.Warnings = append(p.Warnings, fmt.Sprintf("the seed marker lists a path seedkeeper does not write (%d bytes); ignoring it", len(sp)))
			continue
		}
		if _, ok := wantSum[sp]; !ok && !slices.Contains(stale, sp) && existsIn(root, sp) {
			stale = append(stale, sp)
		}
	}
	slices.Sort(stale)
	var todo []file
	for _, f := range want {
		if !same(root, f.path, f.data, f.perm) {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 && len(stale) == 0 && len(mk.Pending) == 0 && maps.Equal(mk.Files, wantSum) {
		return p, nil
	}
	p.markers = true

	// Hand edits: content that matches neither what the marker recorded
	// nor what is about to be written. A file to overwrite is overwritten
	// with a warning; a file to remove is removed only when its content
	// is what seedkeeper wrote (or a person's seed imported just now), and
	// otherwise left in place with a warning.
	ours := func(sp string) (bool, bool) {
		cur, err := readOwn(root.Path(sp))
		if err != nil {
			return false, false
		}
		h := sum(cur)
		if p.Import && strings.HasPrefix(sp, Dir+"/") {
			return true, true // the person's seed, imported by this plan
		}
		return h == mk.Files[sp] || h == mk.Pending[sp], h == wantSum[sp]
	}
	for _, f := range todo {
		if written, same := ours(f.path); !written && !same && existsIn(root, f.path) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s was changed by hand since seedkeeper wrote it; overwriting it (change the metadata instead)", f.path))
		}
		p.write = append(p.write, f)
		p.Writes = append(p.Writes, f.path)
	}
	for _, sp := range stale {
		if written, _ := ours(sp); !written {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s is not what seedkeeper wrote there; leaving it in place (remove it by hand if cloud-init must not read it)", sp))
			continue
		}
		p.Removes = append(p.Removes, sp)
	}

	// The marker written before the files records what each file holds
	// now when that is ours (a kill during an earlier write may have left
	// some files at its pending content): every file on disk is then
	// either in Files or in Pending, however many writes are cut short in
	// a row.
	known := maps.Clone(mk.Files)
	if known == nil {
		known = map[string]string{}
	}
	for sp, h := range mk.Pending {
		if !managed(sp) {
			continue
		}
		if cur, err := readOwn(root.Path(sp)); err == nil && sum(cur) == h {
			known[sp] = h
		}
	}
	p.pending = &marker{Files: known, Pending: wantSum}
	p.final = &marker{Files: wantSum}
	return p, nil
}

// Apply carries out the plan, and nothing else: the seed directory made
// (0700), the temporaries of a killed run removed, a person's seed
// imported and the directory claimed with the marker, then the marker
// with the hashes about to be written, the files (each atomically, never
// through a symbolic link, whatever was put in the way since the plan),
// the removals, and the marker last. A kill at any point leaves files the
// marker knows.
func (p *Plan) Apply() (Result, error) {
	root := p.Root
	res := Result{Dir: Dir, Warnings: slices.Clone(p.Warnings)}
	if p.Empty() {
		return res, nil
	}
	// The way may have changed since the plan: checked again.
	if err := confined(root, "writing the seed"); err != nil {
		return res, err
	}
	if err := ensureDir(root, Dir, 0o700, true); err != nil {
		return res, err
	}
	removeTemps(root, p.tempFiles, p.tempDirs)
	if p.Import {
		imported, err := importSeed(root, p.importNames)
		if err != nil {
			return res, err
		}
		if imported == "" {
			return res, fmt.Errorf("importing the seed in %s: %s appeared since the plan was made", Dir, ImportDir)
		}
		res.Imported = imported
	}
	if p.claim {
		if err := writeMarker(root, &marker{}); err != nil {
			return res, err
		}
	}
	if !p.markers {
		return res, nil
	}
	if err := writeMarker(root, p.pending); err != nil {
		return res, err
	}
	for _, f := range p.write {
		if err := ensureDir(root, path.Dir(f.path), 0o755, false); err != nil {
			return res, err
		}
		changed, err := fsutil.WriteFile(root.Path(f.path), f.data, f.perm)
		if err != nil {
			return res, fmt.Errorf("writing the seed: %w", err)
		}
		if changed {
			res.Written = append(res.Written, f.path)
		}
	}
	for _, sp := range p.Removes {
		if err := fsutil.RemoveIn(string(root), sp, false); err != nil {
			return res, fmt.Errorf("writing the seed: %w", err)
		}
		if err := fsutil.SyncDirIn(string(root), filepath.Dir(sp)); err != nil {
			return res, fmt.Errorf("writing the seed: %w", err)
		}
		res.Removed = append(res.Removed, sp)
	}
	if err := writeMarker(root, p.final); err != nil {
		return res, err
	}
	return res, nil
}

// files returns every file s asks for.
func files(s Seed) ([]file, error) {
	fs, _, err := filesWarn(s)
	return fs, err
}

// filesWarn returns every file s asks for, and warnings for the fields
// of s that were left out.
func filesWarn(s Seed) ([]file, []string, error) {
	md, warnings, err := metaData(s)
	if err != nil {
		return nil, nil, err
	}
	fs := []file{
		{filepath.Join(Dir, MetaDataFile), md, 0o644},
		{filepath.Join(Dir, UserDataFile), nonNil(s.UserData), 0o600},
		{filepath.Join(Dir, VendorDataFile), nonNil(s.VendorData), 0o600},
	}
	if s.NetworkConfig != nil {
		nc, err := UnwrapNetworkConfig(s.NetworkConfig)
		if err != nil {
			return nil, nil, err
		}
		fs = append(fs, file{filepath.Join(Dir, NetworkConfigFile), nc, 0o600})
	}
	if x := s.SmartOS; x != nil {
		if len(x.OperatorScript) > 0 {
			fs = append(fs, file{OperatorScript, script(x.OperatorScript), 0o700})
		}
		if len(x.UserScript) > 0 {
			fs = append(fs, file{UserScript, script(x.UserScript), 0o700})
		}
		if len(x.LegacyUserData) > 0 {
			fs = append(fs, file{LegacyUserData, x.LegacyUserData, 0o400})
		}
	}
	return fs, warnings, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// script adds "#!/bin/bash" to a text script that has no "#!" line, as
// cloud-init's SmartOS datasource does for user-script.
func script(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("#!")) || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return b
	}
	return append([]byte("#!/bin/bash\n"), b...)
}

// MetaData returns the meta-data document for s: instance-id,
// local-hostname and public-keys, every value a double-quoted YAML string.
// The instance ID must pass datasource.CheckInstanceID (cloud-init makes
// a directory of it). A hostname that cannot be written as one line (a
// control or line-separator character, invalid UTF-8) is left out, and so
// are the public keys pubkey.Filter leaves out: one bad
// field does not cost the seed. Write reports them in Result.Warnings.
func MetaData(s Seed) ([]byte, error) {
	b, _, err := metaData(s)
	return b, err
}

func metaData(s Seed) ([]byte, []string, error) {
	if err := datasource.CheckInstanceID(s.InstanceID); err != nil {
		return nil, nil, fmt.Errorf("meta-data instance-id: %w", err)
	}
	var warnings []string
	str := func(v string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}
	}
	key := func(k string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k} }
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, key("instance-id"), str(s.InstanceID))
	if s.Hostname != "" {
		// cloud-init keeps the hostname in line-based files.
		if err := netcfg.CheckLine(s.Hostname); err != nil {
			warnings = append(warnings, fmt.Sprintf("meta-data local-hostname left out: %v", err))
		} else {
			doc.Content = append(doc.Content, key("local-hostname"), str(s.Hostname))
		}
	}
	keys := &yaml.Node{Kind: yaml.SequenceNode}
	kept, dropped := pubkey.Filter(s.PublicKeys)
	for _, d := range dropped {
		warnings = append(warnings, fmt.Sprintf("meta-data public-keys[%d] left out: %v", d.Index, d.Err))
	}
	for _, k := range kept {
		keys.Content = append(keys.Content, str(k))
	}
	if len(keys.Content) > 0 {
		doc.Content = append(doc.Content, key("public-keys"), keys)
	}
	b, err := encode(doc)
	return b, warnings, err
}

func encode(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	return b.Bytes(), nil
}

// UnwrapNetworkConfig returns a network config without a top-level
// "network:" key, which cloud-init 22.4's NoCloud rejects. A document that
// is not wrapped is returned byte for byte; a wrapped one is re-encoded
// from its "network" value, with every YAML alias replaced by what it
// stands for (an alias whose anchor lay outside "network" would otherwise
// be written dangling). Either way a document that, aliases expanded,
// is larger than netcfg.MaxExpandedSize is refused: cloud-init expands
// it when it renders the network.
func UnwrapNetworkConfig(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yamlx.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("network-config: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return data, nil // empty document
	}
	resolved, err := yamlx.Resolve(&doc, netcfg.MaxExpandedSize)
	if err != nil {
		return nil, fmt.Errorf("network-config: %w", err)
	}
	top := resolved.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, errors.New("network-config: the top level is not a mapping")
	}
	var inner *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		switch top.Content[i].Value {
		case "version":
			return data, nil
		case "network":
			inner = top.Content[i+1]
		}
	}
	if inner == nil {
		return data, nil
	}
	if inner.Kind != yaml.MappingNode {
		return nil, errors.New("network-config: \"network\" is not a mapping")
	}
	out, err := encode(inner)
	if err != nil {
		return nil, fmt.Errorf("network-config: %w", err)
	}
	return out, nil
}

// sum is the hash of a file's content the marker keeps, the one
// fsutil.RemoveInIfSum checks.
func sum(b []byte) string { return fsutil.Sum(b) }

// same reports whether the system path p under root is a regular file
// holding data with mode perm. It compares as it reads: a value of many
// MiB is not held twice.
func same(root sysroot.Root, p string, data []byte, perm fs.FileMode) bool {
	fi, err := fsutil.StatIn(string(root), p, false)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		return false
	}
	eq, err := fsutil.SameFileIn(context.Background(), string(root), p, data)
	return err == nil && eq
}

// maxFile bounds every file seed reads back: its own output, a person's
// seed (the datasource's limit for one seed file).
const maxFile = 16 << 20

// readOwn reads a file seed wrote (or is about to replace) with the one
// bounded reader, never through a link, never from a FIFO or a device.
func readOwn(path string) ([]byte, error) {
	return fsutil.ReadFileNoFollow(context.Background(), path, maxFile)
}

// readOwnIn is readOwn for the system path p under root, confined to it.
func readOwnIn(root sysroot.Root, p string) ([]byte, error) {
	return fsutil.ReadFileInNoFollow(context.Background(), string(root), p, maxFile)
}

// managedPaths are the only system paths seed writes, and so the only
// ones it may remove.
var managedPaths = []string{
	filepath.Join(Dir, MetaDataFile), filepath.Join(Dir, UserDataFile),
	filepath.Join(Dir, VendorDataFile), filepath.Join(Dir, NetworkConfigFile),
	OperatorScript, UserScript, LegacyUserData,
}

// managed reports whether p is a path seed writes.
func managed(p string) bool { return slices.Contains(managedPaths, p) }

// existsIn reports whether the system path p is there under root (a link
// itself counts).
func existsIn(root sysroot.Root, p string) bool {
	_, err := fsutil.StatIn(string(root), p, false)
	return err == nil
}

// ensureDir makes dir a directory, refusing a symbolic link. A directory it
// creates gets mode perm; an existing one is brought to perm only when
// private is set (the seed directory), others keep the mode they have.
func ensureDir(root sysroot.Root, dir string, perm fs.FileMode, private bool) error {
	// Past the umask, or back from a hand edit.
	_, err := fsutil.MkdirIn(string(root), dir, perm, private)
	return err
}

// writtenDirs are the directories seed writes in, lists and removes from.
var writtenDirs = []string{Dir, path.Dir(ImportDir), PerBootDir, path.Dir(LegacyUserData)}

// confined refuses an image root where a link or a mount lies on the way
// to a directory seed writes in: seed writes, lists and removes there by
// the plain path, which would follow a link (or cross a mount) out of the
// root, so that a link at /var/lib/cloud would make boot --root read and
// write the host's seed. The machine's own root is not checked: its links
// are the system's.
func confined(root sysroot.Root, op string) error {
	if root.IsReal() {
		return nil
	}
	for _, d := range writtenDirs {
		if err := fsutil.NoLinkOnTheWayIn(string(root), d); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// temps returns the system paths of the temporary files a killed run left
// next to the files seed manages, and of its temporary import
// directories, listed under root (confined to it).
func temps(root sysroot.Root) (files, dirs []string) {
	byDir := map[string][]string{}
	for _, n := range append(slices.Clone(seedFiles), MarkerName) {
		byDir[Dir] = append(byDir[Dir], "."+n+".tmp-")
	}
	for _, p := range []string{OperatorScript, UserScript, LegacyUserData} {
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], "."+path.Base(p)+".tmp-")
	}
	importTmp := "." + path.Base(ImportDir) + ".tmp-"
	byDir[path.Dir(ImportDir)] = append(byDir[path.Dir(ImportDir)], importTmp)
	for _, d := range slices.Sorted(maps.Keys(byDir)) {
		ents, err := fsutil.ReadDirIn(string(root), d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			for _, prefix := range byDir[d] {
				if !strings.HasPrefix(e.Name(), prefix) || len(e.Name()) == len(prefix) {
					continue
				}
				p := path.Join(d, e.Name())
				if prefix == importTmp && e.IsDir() {
					dirs = append(dirs, p)
				} else if prefix != importTmp {
					files = append(files, p)
				}
			}
		}
	}
	return files, dirs
}

// removeTemps removes what temps listed, confined to root.
func removeTemps(root sysroot.Root, files, dirs []string) {
	for _, p := range files {
		fsutil.RemoveIn(string(root), p, false)
	}
	for _, p := range dirs {
		fsutil.RemoveIn(string(root), p, true)
	}
}

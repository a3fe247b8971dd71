package packaging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
)

// paragraph is one paragraph of a machine-readable (DEP-5) copyright
// file: field -> value, continuation lines joined with "\n" and their
// leading space and "." placeholders taken off.
type paragraph map[string]string

func parseDEP5(t *testing.T, b []byte) []paragraph {
	t.Helper()
	var ps []paragraph
	p := paragraph{}
	field := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(p) > 0 {
				ps = append(ps, p)
			}
			p, field = paragraph{}, ""
		case line[0] == ' ' || line[0] == '\t':
			if field == "" {
				t.Fatalf("copyright:%d: a continuation line outside a field", n)
			}
			c := strings.TrimSpace(line)
			if c == "." {
				c = ""
			}
			p[field] += "\n" + c
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("copyright:%d: not a field", n)
			}
			field = k
			if _, dup := p[k]; dup {
				t.Fatalf("copyright:%d: field %s twice in one paragraph", n, k)
			}
			p[k] = strings.TrimSpace(v)
		}
	}
	if len(p) > 0 {
		ps = append(ps, p)
	}
	return ps
}

// words is s with its whitespace runs made single spaces: license files
// are compared by their words, not by how they were wrapped or indented.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// builtModules returns the modules "go version -m" reports as linked into
// bin: path -> version.
func builtModules(t *testing.T, bin string) map[string]string {
	t.Helper()
	out, err := exec.Command(buildtest.GoTool(), "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	mods := map[string]string{}
	var replaced string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "dep":
			mods[f[1]] = f[2]
			replaced = f[1]
		case len(f) >= 3 && f[0] == "=>":
			// A replaced module: the code linked is the replacement's.
			delete(mods, replaced)
			mods[f[1]] = f[2]
		}
	}
	if len(mods) == 0 {
		t.Fatalf("go version -m %s lists no modules:\n%s", bin, out)
	}
	return mods
}

// moduleDirs downloads (or finds in the module cache) each module and
// returns the directory of its files.
func moduleDirs(t *testing.T, mods map[string]string) map[string]string {
	t.Helper()
	args := []string{"mod", "download", "-json"}
	for p, v := range mods {
		args = append(args, p+"@"+v)
	}
	cmd := exec.Command(buildtest.GoTool(), args...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Dir, Error string }
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" || m.Dir == "" {
			t.Fatalf("go mod download %s: %s", m.Path, m.Error)
		}
		dirs[m.Path] = m.Dir
	}
	return dirs
}

// apacheWords is words without the "(a)" item markers, which some copies
// of the Apache License 2.0 leave off.
func apacheWords(s string) string { return words(itemMarker.ReplaceAllString(s, "")) }

var (
	itemMarker  = regexp.MustCompile(`\([a-z]\)`)
	licenseFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying)(\.md|\.txt)?$`)
	noticeFile  = regexp.MustCompile(`(?i)^notice(\.md|\.txt)?$`)
)

// readMatching returns the contents of the files in dir whose names match re.
func readMatching(t *testing.T, dir string, re *regexp.Regexp) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range ents {
		if e.Type().IsRegular() && re.MatchString(e.Name()) {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
	}
	return texts
}

// TestCopyrightListsEveryModule: packaging/copyright is a DEP-5 file
// that names every Go module "go version -m" finds in the built
// seedkeeper, and the Go standard library, each with the words of the
// module's own license file (or, for an Apache-2.0 module, the reference
// to the Apache-2.0 paragraph) and of its NOTICE, and names no module
// that is not linked in. A new or changed dependency fails here until
// its paragraph is written.
func TestCopyrightListsEveryModule(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("copyright")
	if err != nil {
		t.Fatal(err)
	}
	ps := parseDEP5(t, b)
	if len(ps) == 0 || ps[0]["Format"] != "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" {
		t.Fatal("copyright: the first paragraph has no DEP-5 Format field")
	}
	root, err := os.ReadFile(filepath.Join(repoRoot, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	apache := apacheWords(string(root))
	if !strings.HasPrefix(apache, "Apache License Version 2.0, January 2004") {
		t.Fatal("LICENSE is not the Apache License 2.0")
	}
	// The terms alone: what every copy of the license has, without the
	// appendix some copies leave off.
	apacheTerms, _, _ := strings.Cut(apache, "END OF TERMS AND CONDITIONS")

	standalone := map[string]bool{}
	byFiles := map[string]paragraph{}
	for _, p := range ps[1:] {
		files, ok := p["Files"]
		if !ok {
			if l, ok := p["License"]; ok {
				standalone[strings.SplitN(l, "\n", 2)[0]] = true
			}
			continue
		}
		for _, f := range strings.Fields(files) {
			if byFiles[f] != nil {
				t.Errorf("copyright: Files %s in two paragraphs", f)
			}
			byFiles[f] = p
		}
	}
	if own := byFiles["*"]; own == nil || own["License"] != "Apache-2.0" {
		t.Errorf("copyright: seedkeeper's own paragraph (Files: *) is not License: Apache-2.0")
	}
	if !standalone["Apache-2.0"] {
		t.Errorf("copyright: no stand-alone License: Apache-2.0 paragraph")
	}

	// check holds paragraph p to the license and notice files of a module.
	check := func(name string, p paragraph, licenses, notices []string) {
		if p == nil {
			t.Errorf("copyright: no Files paragraph for %s (add one with its license text)", name)
			return
		}
		if p["Copyright"] == "" {
			t.Errorf("copyright: %s: no Copyright field", name)
		}
		short, body, _ := strings.Cut(p["License"], "\n")
		if len(licenses) == 0 {
			t.Errorf("%s has no license file", name)
		}
		for _, l := range licenses {
			lw := words(l)
			switch {
			case body != "" && strings.Contains(words(body), lw):
			case body == "" && short == "Apache-2.0" && strings.HasPrefix(apacheWords(l), apacheTerms):
			default:
				t.Errorf("copyright: %s: License %q does not carry the words of the module's license file", name, short)
			}
		}
		for _, n := range notices {
			if !strings.Contains(words(p["Comment"]), words(n)) {
				t.Errorf("copyright: %s: the Comment does not carry the module's NOTICE", name)
			}
		}
	}

	mods := builtModules(t, seedkeeperBin(t))
	dirs := moduleDirs(t, mods)
	for path := range mods {
		check(path, byFiles[path+"/*"], readMatching(t, dirs[path], licenseFile), readMatching(t, dirs[path], noticeFile))
	}
	goroot, err := exec.Command(buildtest.GoTool(), "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	check("the Go standard library", byFiles["go/*"], readMatching(t, strings.TrimSpace(string(goroot)), licenseFile), nil)

	for f := range byFiles {
		if f == "*" || f == "go/*" {
			continue
		}
		if _, ok := mods[strings.TrimSuffix(f, "/*")]; !ok {
			t.Errorf("copyright: Files %s is not a module linked into seedkeeper", f)
		}
	}
}

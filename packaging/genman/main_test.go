package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/config"
)

const topHelp = `seedkeeper v1.2.3: the guest-side metadata agent

Usage: seedkeeper COMMAND [ARGS]

Commands:
  boot       detect and write the seed
  version    print the version

Invoked as mdata-get it acts as that tool.
`

func TestParseTop(t *testing.T) {
	v, cmds, err := parseTop(topHelp)
	if err != nil {
		t.Fatal(err)
	}
	if v != "v1.2.3" || len(cmds) != 2 || cmds[0] != (Command{"boot", "detect and write the seed"}) || cmds[1].Name != "version" {
		t.Errorf("parseTop = %q, %+v", v, cmds)
	}
	for _, bad := range []string{"", "seedkeeper v1: x\n\nno list\n", "something else\nCommands:\n  boot  b\n"} {
		if _, _, err := parseTop(bad); err == nil {
			t.Errorf("parseTop(%q) gave no error", bad)
		}
	}
}

func TestFirstParagraph(t *testing.T) {
	got, err := firstParagraph("Usage: mdata-get <keyname>\n\nPrint the value\nof a key.\n\nMore.\n")
	if err != nil || got != "Print the value of a key" {
		t.Errorf("firstParagraph = %q, %v", got, err)
	}
	if _, err := firstParagraph("no usage here\n"); err == nil {
		t.Error("firstParagraph of a help without Usage gave no error")
	}
}

// TestRoff checks the page layout and the escaping of what roff would
// otherwise read as requests, escapes or hyphenation points.
func TestRoff(t *testing.T) {
	p := Page{
		Name: "seedkeeper-net", Summary: "plan or apply", Version: "v1-dirty",
		Help:    "Usage: seedkeeper net plan  --config FILE\n       seedkeeper net apply --config FILE\n\n.starts with a dot\n'starts with a quote\na \\back slash\n",
		SeeAlso: []string{"seedkeeper", "mdata-get"},
	}
	want := `.TH SEEDKEEPER\-NET 8 "" "seedkeeper v1\-dirty" "System Administration"
.SH NAME
seedkeeper\-net \- plan or apply
.SH SYNOPSIS
.nf
seedkeeper net plan  \-\-config FILE
seedkeeper net apply \-\-config FILE
.fi
.SH DESCRIPTION
.nf
\&.starts with a dot
\&'starts with a quote
a \eback slash
.fi
.SH SEE ALSO
.BR seedkeeper (8),
.BR mdata\-get (8)
`
	if got := string(p.Roff()); got != want {
		t.Errorf("Roff:\n%s\nwant:\n%s", got, want)
	}
}

// The Environment: and Files: paragraphs of a help are the ENVIRONMENT
// and FILES sections, where a reader of a man page looks for them.
func TestRoffSections(t *testing.T) {
	p := Page{Name: "seedkeeper", Summary: "agent", Version: "v1",
		Help: "Usage: seedkeeper COMMAND\n\nDoes things.\n\nEnvironment:\n  SEEDKEEPER_MDATA  the transport\n\nFiles:\n  /etc/seedkeeper/config.yaml  the configuration\n"}
	want := ".SH DESCRIPTION\n.nf\nDoes things.\n.fi\n.SH ENVIRONMENT\n.nf\n  SEEDKEEPER_MDATA  the transport\n.fi\n.SH FILES\n.nf\n  /etc/seedkeeper/config.yaml  the configuration\n.fi\n"
	if got := string(p.Roff()); !strings.HasSuffix(got, want) {
		t.Errorf("Roff:\n%s\nwant it to end:\n%s", got, want)
	}
}

// TestRun makes the pages from a stand-in binary (a shell script printing
// help) and checks the set of pages and that they are stable.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "seedkeeper")
	script := "#!/bin/sh\ncase \"$(basename \"$0\") $1\" in\n" +
		"\"seedkeeper --help\") cat <<'E'\n" + topHelp + "E\n;;\n" +
		"\"seedkeeper boot\") echo 'Usage: seedkeeper boot'; echo; echo 'Boots.' ;;\n" +
		"mdata-*) echo \"Usage: $(basename \"$0\") <keyname>\"; echo; echo 'Does a thing.' ;;\n" +
		"*) exit 3 ;;\nesac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "man")
	if err := run(bin, out, "../.."); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := "mdata-delete.8.gz mdata-get.8.gz mdata-list.8.gz mdata-put.8.gz seedkeeper-boot.8.gz seedkeeper-config.5.gz seedkeeper.8.gz"
	if strings.Join(names, " ") != want {
		t.Errorf("pages %v; want %s", names, want)
	}
	first := readGz(t, filepath.Join(out, "mdata-put.8.gz"))
	if !strings.Contains(first, "mdata\\-put \\- Does a thing\n") {
		t.Errorf("mdata-put page:\n%s", first)
	}
	// The configuration's page: section 5, every line of the reference.
	cfg := readGz(t, filepath.Join(out, "seedkeeper-config.5.gz"))
	if !strings.HasPrefix(cfg, ".TH SEEDKEEPER\\-CONFIG 5 ") || !strings.Contains(cfg, ".SH SYNOPSIS\n.nf\n/etc/seedkeeper/config.yaml\n") ||
		!strings.Contains(cfg, verbatim(config.Reference)) {
		t.Errorf("seedkeeper-config(5):\n%s", cfg)
	}
	if top := readGz(t, filepath.Join(out, "seedkeeper.8.gz")); !strings.Contains(top, ".BR seedkeeper\\-config (5)") {
		t.Errorf("seedkeeper(8) does not refer to seedkeeper-config(5):\n%s", top)
	}
	a, _ := os.ReadFile(filepath.Join(out, "seedkeeper.8.gz"))
	if err := run(bin, out, "../.."); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, "seedkeeper.8.gz"))
	if !bytes.Equal(a, b) {
		t.Error("two runs wrote different bytes")
	}
	// A command whose --help fails stops the run.
	if err := os.WriteFile(bin, []byte(strings.Replace(script, "echo 'Boots.'", "exit 1", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, out, "../.."); err == nil {
		t.Error("a failing --help gave no error")
	}
}

func readGz(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCite: a page names the documents its help cites by the paths the
// packages install them at, and a help that cites a document the source
// tree does not have (so no package installs it) fails the run.
func TestCite(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"docs/changes.md", "README.md", "CHANGELOG.md"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := cite("see docs/changes.md), README.md and CHANGELOG.md.\n", src)
	if want := "see /usr/share/doc/seedkeeper/docs/changes.md), /usr/share/doc/seedkeeper/README.md and /usr/share/doc/seedkeeper/changelog.gz.\n"; err != nil || got != want {
		t.Errorf("cite = %q, %v; want %q", got, err, want)
	}
	if _, err := cite("see docs/gone.md\n", src); err == nil || !strings.Contains(err.Error(), "docs/gone.md") {
		t.Errorf("a citation of a missing document: %v; want an error naming it", err)
	}
	// A page whose help cites such a document stops the run, named.
	dir := t.TempDir()
	bin := filepath.Join(dir, "seedkeeper")
	script := "#!/bin/sh\ncase \"$(basename \"$0\") $1\" in\n" +
		"\"seedkeeper --help\") cat <<'E'\n" + topHelp + "E\n;;\n" +
		"\"seedkeeper boot\") echo 'Usage: seedkeeper boot'; echo; echo 'Boots (docs/nothing-here.md).' ;;\n" +
		"mdata-*) echo \"Usage: $(basename \"$0\") <keyname>\"; echo; echo 'Does a thing.' ;;\n" +
		"*) exit 3 ;;\nesac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, filepath.Join(dir, "man"), "../.."); err == nil || !strings.Contains(err.Error(), "seedkeeper-boot") {
		t.Errorf("a page citing a document the tree lacks: %v; want an error naming the page", err)
	}
}

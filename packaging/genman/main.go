// Command genman writes section 8 man pages for seedkeeper from the --help
// text of a built seedkeeper binary: one page for seedkeeper itself, one per
// command ("seedkeeper-boot" etc.) and one per mdata tool. The help text is
// the single source, so the pages cannot drift from the program; its
// "Environment:" and "Files:" paragraphs become the ENVIRONMENT and FILES
// sections. It also writes seedkeeper-config(5), the configuration file's
// page, from the configuration's reference (internal/config.Reference).
// Run by "make package":
//
//	go run ./packaging/genman -bin bin/seedkeeper -out dist/man
//
// Pages are written gzip-compressed (NAME.8.gz), byte-identical from run to
// run for the same binary.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/config"
)

// mdataTools are the names the binary answers to as the mdata tools.
var mdataTools = []string{"mdata-get", "mdata-put", "mdata-delete", "mdata-list"}

// noPage are commands whose --help has nothing a page would add.
var noPage = map[string]bool{
	"version": true, // prints the version
	"mdata":   true, // the mdata tools have their own pages
}

func main() {
	bin := flag.String("bin", "bin/seedkeeper", "the seedkeeper `binary` to read the help of")
	out := flag.String("out", "dist/man", "`directory` to write the pages to")
	src := flag.String("src", ".", "the source tree's `directory`, where the documents the help cites are")
	flag.Parse()
	if err := run(*bin, *out, *src); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}

func run(bin, out, src string) error {
	top, err := help(bin, bin, "--help")
	if err != nil {
		return err
	}
	version, cmds, err := parseTop(top)
	if err != nil {
		return fmt.Errorf("%s --help: %w", bin, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var pages []Page
	see := []string{}
	for _, c := range cmds {
		if !noPage[c.Name] {
			see = append(see, "seedkeeper-"+c.Name)
		}
	}
	see = append(see, mdataTools...)
	see = append(see, "seedkeeper-config(5)")
	pages = append(pages, Page{Name: "seedkeeper", Summary: "the guest-side metadata agent", Help: top, SeeAlso: see})
	for _, c := range cmds {
		if noPage[c.Name] {
			continue
		}
		h, err := help(bin, bin, c.Name, "--help")
		if err != nil {
			return err
		}
		pages = append(pages, Page{Name: "seedkeeper-" + c.Name, Summary: c.Summary, Help: h, SeeAlso: []string{"seedkeeper"}})
	}
	// The mdata tools are the same binary under another name.
	tmp, err := os.MkdirTemp("", "genman")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	for _, t := range mdataTools {
		link := filepath.Join(tmp, t)
		if err := os.Symlink(abs, link); err != nil {
			return err
		}
		h, err := help(bin, link, "--help")
		if err != nil {
			return err
		}
		sum, err := firstParagraph(h)
		if err != nil {
			return fmt.Errorf("%s --help: %w", t, err)
		}
		var others []string
		for _, o := range mdataTools {
			if o != t {
				others = append(others, o)
			}
		}
		pages = append(pages, Page{Name: t, Summary: sum, Help: h, SeeAlso: append(others, "seedkeeper")})
	}
	pages = append(pages, Page{Name: "seedkeeper-config", Section: 5, Summary: "the configuration file of seedkeeper",
		Help:    "Usage: /etc/seedkeeper/config.yaml\n\n" + config.ReferenceIntro + "\n" + config.Reference,
		SeeAlso: []string{"seedkeeper", "seedkeeper-boot", "seedkeeper-watch"}})
	for _, p := range pages {
		p.Version = version
		if p.Help, err = cite(p.Help, src); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if err := writeGz(filepath.Join(out, fmt.Sprintf("%s.%d.gz", p.Name, p.section())), p.Roff()); err != nil {
			return err
		}
	}
	return nil
}

// DocDir is where the packages install the documents of the source tree
// (the Makefile's pkgdoc: README.md, SECURITY.md, docs/*.md, and
// CHANGELOG.md as changelog.gz).
const DocDir = "/usr/share/doc/seedkeeper"

// citation is a document of the source tree a help text may cite.
var citation = regexp.MustCompile(`\b(docs/[A-Za-z0-9_.-]+\.md|README\.md|SECURITY\.md|CHANGELOG\.md)\b`)

// cite rewrites each document h cites to the path the packages install
// it at, so that a page names a file the reader has; a document the source
// tree (src) does not have, and so no package installs, is an error.
func cite(h, src string) (string, error) {
	var missing []string
	out := citation.ReplaceAllStringFunc(h, func(doc string) string {
		if _, err := os.Stat(filepath.Join(src, doc)); err != nil {
			missing = append(missing, doc)
		}
		if doc == "CHANGELOG.md" {
			return DocDir + "/changelog.gz"
		}
		return DocDir + "/" + doc
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the help cites %s, which the packages do not install (not in %s)", strings.Join(missing, ", "), src)
	}
	return out, nil
}

// help runs path (bin, or a link to it) with args and returns its standard
// output; the command must succeed and print something.
func help(bin, path string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if stdout.Len() == 0 {
		return "", fmt.Errorf("%s %s printed no help (binary %s)", filepath.Base(path), strings.Join(args, " "), bin)
	}
	return stdout.String(), nil
}

// Command is one entry of the top-level command list.
type Command struct{ Name, Summary string }

// parseTop reads the version from the first line of "seedkeeper --help"
// ("seedkeeper VERSION: ...") and the commands from its "Commands:" list.
func parseTop(h string) (version string, cmds []Command, err error) {
	first, _, _ := strings.Cut(h, "\n")
	if rest, ok := strings.CutPrefix(first, "seedkeeper "); ok {
		version, _, _ = strings.Cut(rest, ":")
	}
	in := false
	sc := bufio.NewScanner(strings.NewReader(h))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Commands:":
			in = true
		case in && strings.HasPrefix(line, "  "):
			name, sum, _ := strings.Cut(strings.TrimSpace(line), " ")
			cmds = append(cmds, Command{name, strings.TrimSpace(sum)})
		case in:
			in = false
		}
	}
	if version == "" {
		return "", nil, errors.New(`first line is not "seedkeeper VERSION: ..."`)
	}
	if len(cmds) == 0 {
		return "", nil, errors.New(`no "Commands:" list`)
	}
	return version, cmds, nil
}

// firstParagraph returns the paragraph after the "Usage:" lines, joined
// into one line, without a final period: a tool's one-line summary.
func firstParagraph(h string) (string, error) {
	paras := strings.Split(strings.TrimSpace(h), "\n\n")
	if len(paras) < 2 || !strings.HasPrefix(paras[0], "Usage:") {
		return "", errors.New(`want a "Usage:" paragraph and a summary after it`)
	}
	return strings.TrimSuffix(strings.Join(strings.Fields(paras[1]), " "), "."), nil
}

// Page is one man page made from a command's help text.
type Page struct {
	Name, Summary, Version string
	Section                int    // 8 when 0
	Help                   string // the --help output, verbatim
	// SeeAlso names pages of section 8, or "NAME(N)" of another.
	SeeAlso []string
}

func (p Page) section() int {
	if p.Section == 0 {
		return 8
	}
	return p.Section
}

// headings are the paragraphs of a help text that become sections of
// their own, by their first line.
var headings = map[string]string{"Environment:": "ENVIRONMENT", "Files:": "FILES"}

// Roff renders p as a man(7) page. The help text is kept as it is, in a
// no-fill block: its own layout (option tables, examples) is the layout.
// The "Usage:" lines become the SYNOPSIS.
func (p Page) Roff() []byte {
	var b bytes.Buffer
	manual := "System Administration"
	if p.section() == 5 {
		manual = "File Formats"
	}
	fmt.Fprintf(&b, ".TH %s %d \"\" \"seedkeeper %s\" \"%s\"\n", esc(strings.ToUpper(p.Name)), p.section(), esc(p.Version), manual)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", esc(p.Name), esc(p.Summary))
	synopsis, body := splitUsage(p.Help)
	if synopsis != "" {
		fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n%s.fi\n", verbatim(synopsis))
	}
	// A paragraph under a heading of its own (Environment:, Files:)
	// is its own section, in the order of the text.
	sections := []string{"DESCRIPTION"}
	texts := []string{""}
	for _, para := range strings.SplitAfter(body, "\n\n") {
		first, rest, _ := strings.Cut(para, "\n")
		if h, ok := headings[first]; ok {
			sections, texts = append(sections, h), append(texts, rest)
			continue
		}
		texts[len(texts)-1] += para
	}
	for i, sec := range sections {
		text := strings.TrimRight(texts[i], "\n") + "\n"
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&b, ".SH %s\n.nf\n%s.fi\n", sec, verbatim(text))
	}
	if len(p.SeeAlso) > 0 {
		refs := make([]string, len(p.SeeAlso))
		for i, s := range p.SeeAlso {
			name, sec := s, "8"
			if n, rest, ok := strings.Cut(s, "("); ok {
				name, sec = n, strings.TrimSuffix(rest, ")")
			}
			refs[i] = ".BR " + esc(name) + " (" + sec + ")"
			if i < len(p.SeeAlso)-1 {
				refs[i] += ","
			}
		}
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(refs, "\n"))
	}
	return b.Bytes()
}

// splitUsage separates the leading "Usage:" lines (and their continuation
// lines) from the rest of the help text.
func splitUsage(h string) (synopsis, body string) {
	lines := strings.Split(strings.TrimRight(h, "\n"), "\n")
	i := 0
	for ; i < len(lines); i++ {
		l := lines[i]
		if i == 0 && !strings.HasPrefix(l, "Usage:") {
			break
		}
		if i > 0 && !strings.HasPrefix(l, " ") {
			break
		}
		synopsis += strings.TrimSpace(strings.TrimPrefix(l, "Usage:")) + "\n"
	}
	rest := strings.TrimLeft(strings.Join(lines[i:], "\n"), "\n")
	return synopsis, rest + "\n"
}

// esc escapes text for a roff line: backslashes and hyphens.
func esc(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// verbatim escapes lines for a no-fill block: a line that would start with
// a control character gets a zero-width \& first, and an empty line stays
// empty.
func verbatim(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l == "" {
			continue
		}
		l = esc(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		b.WriteString(l)
	}
	return b.String()
}

// writeGz writes data gzip-compressed to path, with no name or time in the
// header, so the same input gives the same bytes.
func writeGz(path string, data []byte) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where and when a run happened, for the results page.
type Machine struct {
	Uname  string // uname -a
	CPU    string // the model name from /proc/cpuinfo
	Cores  int
	Date   time.Time
	Commit string // git rev-parse --short HEAD, with "-dirty" for a changed tree
	Go     string
	Load   string // /proc/loadavg's first three fields at the start
}

// ThisMachine describes the machine it runs on, with dir as the git work
// tree; what cannot be found is left as "unknown".
func ThisMachine(dir string) Machine {
	m := Machine{Uname: "unknown", CPU: "unknown", Cores: runtime.NumCPU(), Date: time.Now().UTC(), Commit: "unknown", Go: runtime.Version()}
	if out, err := exec.Command("uname", "-a").Output(); err == nil {
		m.Uname = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	if c, err := git("rev-parse", "--short", "HEAD"); err == nil {
		m.Commit = c
		if st, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			m.Commit += "-dirty"
		}
	}
	return m
}

// Markdown renders m as a short list.
func (m Machine) Markdown() string {
	s := fmt.Sprintf("- Date: %s\n- Commit: `%s`\n- Machine: `%s`\n- CPU: %s, %d cores; load average at the start: %s\n- Go: %s\n",
		m.Date.Format("2006-01-02 15:04 UTC"), m.Commit, m.Uname, m.CPU, m.Cores, m.Load, m.Go)
	if m.Loaded() {
		s += "- **The machine was loaded** (a load average above its core count: other jobs were running). " +
			"Absolute times are slower and noisier than on a quiet machine; the ratios, measured side by side in one run, hold better.\n"
	}
	return s
}

// Loaded reports whether the one-minute load average at the start was
// above the number of cores.
func (m Machine) Loaded() bool {
	f := strings.Fields(m.Load)
	if len(f) == 0 {
		return false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	return err == nil && l > float64(m.Cores)
}

// pageHeader starts a results page that does not exist yet.
const pageHeader = `# seedkeeper benchmarks and fault matrix

This page is generated: ` + "`make bench`" + ` writes the benchmark section,
` + "`make faults`" + ` the fault-matrix section and ` + "`make bench-hostile`" + ` the
memory on hostile input (all by bench/cmd/skbench). Do not edit the
figures by hand; run the targets again.

`

// UpdateSection replaces the generated section name of the Markdown file
// at path with body, between the markers <!-- BEGIN name --> and
// <!-- END name -->, keeping the rest of the file. A missing file is
// created with a header; a missing section is appended.
func UpdateSection(path, name, body string) error {
	begin, end := "<!-- BEGIN "+name+" -->\n", "<!-- END "+name+" -->\n"
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = []byte(pageHeader), nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	section := begin + strings.TrimRight(body, "\n") + "\n" + end
	var out []byte
	i := bytes.Index(old, []byte(begin))
	j := bytes.Index(old, []byte(end))
	switch {
	case i >= 0 && j > i:
		out = append(append(append([]byte{}, old[:i]...), section...), old[j+len(end):]...)
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: section %q has only one of its markers", path, name)
	default:
		out = append(bytes.TrimRight(old, "\n"), "\n\n"+section...)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

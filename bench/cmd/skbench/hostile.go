package main

// skbench hostile: the peak RSS of every process the hostile-input corpus
// (testdata/hostile) starts, on scratch roots made the way cmd/seedkeeper's
// TestHostile*Corpus tests make them. The budget is SECURITY.md's
// ("Limits"): boot stays under 64 MiB whatever the input.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/bench"
)

const (
	hostileDir    = "testdata/hostile"
	rssBudgetKiB  = 64 * 1024
	hostileMarker = "SECRETMARKER" // what the corpus tests look for in the host key
	kvmProduct    = "Standard PC (i440FX + PIIX, 1996)"
	kvmUUID       = "0E9F5E21-6C3B-4D7A-9C1E-2B7A6D3F4E51"
)

// hostileStep is one process of a case.
type hostileStep struct {
	cmd  string // the column it goes in
	rss  int64  // peak RSS, KiB
	dur  time.Duration
	exit int
	bad  string // a crash or an overrun, or ""
}

type hostileCase struct {
	name  string
	steps []hostileStep
}

func (c *hostileCase) peak() int64 {
	var m int64
	for _, s := range c.steps {
		m = max(m, s.rss)
	}
	return m
}

// hostileColumns are the commands a case may run, in the table's order.
var hostileColumns = []string{"fetch", "boot", "second boot", "status", "watch", "image check", "image seal"}

// runStep runs one command of a case and records it.
func (c *hostileCase) runStep(ctx context.Context, col string, env []string, argv ...string) {
	p, err := runProc(ctx, env, argv...)
	s := hostileStep{cmd: col, rss: p.rss, dur: p.dur, exit: p.exit}
	switch {
	case err != nil:
		s.bad = err.Error()
	case strings.Contains(string(p.stderr), "panic:") || strings.Contains(string(p.stderr), "fatal error:"):
		s.bad = "crashed"
	case p.exit > 4:
		s.bad = fmt.Sprintf("exit %d", p.exit)
	}
	c.steps = append(c.steps, s)
}

// hostileRoot makes a KVM scratch root with a host key a seedfrom may try
// to reach, as cmd/seedkeeper's hostileRoot does.
func hostileRoot(dir string) error {
	if err := dmiRoot(dir, kvmProduct, "QEMU", kvmUUID); err != nil {
		return err
	}
	if err := writeFileMode(filepath.Join(dir, "etc/ssh/ssh_host_rsa_key"), "-----BEGIN OPENSSH PRIVATE KEY-----\n"+hostileMarker+"\n", 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "etc/passwd"), "root:x:0:0::/root:/bin/sh\n")
}

// copySeed puts the files of the seed directory src into root's NoCloud
// seed directory.
func copySeed(src, root string, names ...string) error {
	if len(names) == 0 {
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if err := writeFileMode(filepath.Join(root, "var/lib/cloud/seed/nocloud", n), string(b), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func writeFileMode(path, data string, mode os.FileMode) error {
	if err := writeFile(path, data); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

func corpusCases(kind string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(hostileDir, kind))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s cases in %s", kind, hostileDir)
	}
	return out, nil
}

// hostile runs every case of the corpus once and renders the section; it
// returns the cases too, for overBudget.
//
// only, when not "", keeps the cases whose name holds it.
func hostile(ctx context.Context, bin, only string, logf func(string, ...any)) (string, []*hostileCase, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "skbench-hostile-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	n := 0
	newDir := func() string {
		n++
		return filepath.Join(tmp, fmt.Sprint(n))
	}
	var cases []*hostileCase

	// nocloud: fetch --seed, then boot twice on a root holding the seed
	// (the second boot reads the imported seed).
	names, err := corpusCases("nocloud")
	if err != nil {
		return "", nil, err
	}
	for _, name := range names {
		src, _ := filepath.Abs(filepath.Join(hostileDir, "nocloud", name))
		c := &hostileCase{name: "nocloud/" + name}
		if !strings.Contains(c.name, only) {
			continue
		}
		logf("hostile: %s", c.name)
		c.runStep(ctx, "fetch", nil, bin, "fetch", "--seed", src)
		root := newDir()
		if err := hostileRoot(root); err != nil {
			return "", nil, err
		}
		if err := copySeed(src, root); err != nil {
			return "", nil, err
		}
		c.runStep(ctx, "boot", nil, bin, "boot", "--root", root)
		c.runStep(ctx, "second boot", nil, bin, "boot", "--root", root)
		c.runStep(ctx, "status", nil, bin, "status", "--root", root)
		cases = append(cases, c)
	}

	// guestinfo: through the stub vmware-rpctool of testdata/vmware.
	names, err = corpusCases("guestinfo")
	if err != nil {
		return "", nil, err
	}
	for _, name := range names {
		c := &hostileCase{name: "guestinfo/" + name}
		if !strings.Contains(c.name, only) {
			continue
		}
		logf("hostile: %s", c.name)
		base := newDir()
		stub, gi := filepath.Join(base, "bin"), filepath.Join(base, "guestinfo")
		for _, f := range []string{"vmware-rpctool", "vmtoolsd", "guestinfo-stub.sh"} {
			b, err := os.ReadFile(filepath.Join("testdata/vmware", f))
			if err != nil {
				return "", nil, err
			}
			if err := writeFileMode(filepath.Join(stub, f), string(b), 0o755); err != nil {
				return "", nil, err
			}
		}
		src := filepath.Join(hostileDir, "guestinfo", name)
		entries, err := os.ReadDir(src)
		if err != nil {
			return "", nil, err
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				return "", nil, err
			}
			if err := writeFileMode(filepath.Join(gi, "guestinfo."+e.Name()), string(b), 0o600); err != nil {
				return "", nil, err
			}
		}
		root := filepath.Join(base, "root")
		if err := dmiRoot(root, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678"); err != nil {
			return "", nil, err
		}
		env := []string{"PATH=" + stub + ":/usr/bin:/bin", "GUESTINFO_DIR=" + gi}
		c.runStep(ctx, "fetch", env, bin, "fetch", "--root", root, "--source", "vmware")
		c.runStep(ctx, "boot", env, bin, "boot", "--root", root)
		cases = append(cases, c)
	}

	// config: boot --config on a root with a good seed, plus the two
	// files the corpus cannot hold (a device and a FIFO).
	names, err = corpusCases("config")
	if err != nil {
		return "", nil, err
	}
	fifo := filepath.Join(tmp, "config-fifo")
	if err := mkfifo(fifo); err != nil {
		return "", nil, err
	}
	configs := []string{"/dev/zero", fifo}
	for _, name := range names {
		p, _ := filepath.Abs(filepath.Join(hostileDir, "config", name))
		configs = append(configs, p)
	}
	good := filepath.Join(hostileDir, "nocloud", "passwords-in-lists")
	for _, cfg := range configs {
		label := "config/" + filepath.Base(cfg)
		switch cfg {
		case "/dev/zero":
			label = "config: /dev/zero"
		case fifo:
			label = "config: a FIFO"
		}
		c := &hostileCase{name: label}
		if !strings.Contains(c.name, only) {
			continue
		}
		logf("hostile: %s", c.name)
		root := newDir()
		if err := hostileRoot(root); err != nil {
			return "", nil, err
		}
		if err := copySeed(good, root, "meta-data", "user-data"); err != nil {
			return "", nil, err
		}
		c.runStep(ctx, "boot", nil, bin, "boot", "--root", root, "--config", cfg)
		cases = append(cases, c)
	}
	limits, err := limitCases(ctx, bin, newDir(), only, logf)
	if err != nil {
		return "", nil, err
	}
	cases = append(cases, limits...)
	if ctx.Err() != nil {
		return "", nil, ctx.Err()
	}
	return hostileMarkdown(cases, time.Since(start)), cases, nil
}

func hostileMarkdown(cases []*hostileCase, took time.Duration) string {
	slices.SortStableFunc(cases, func(a, b *hostileCase) int {
		return cmp.Or(cmp.Compare(b.peak(), a.peak()), strings.Compare(a.name, b.name))
	})
	var b strings.Builder
	b.WriteString("## Memory on hostile input\n\n")
	b.WriteString(bench.ThisMachine(".").Markdown())
	fmt.Fprintf(&b, "- Command: `make bench-hostile` (`skbench hostile`), %s\n\n", took.Round(time.Second))
	b.WriteString(hostileLegend)
	b.WriteString("| case | peak | " + strings.Join(hostileColumns, " | ") + " |\n|---|---:|" + strings.Repeat("---:|", len(hostileColumns)) + "\n")
	var over, bad []string
	procs := 0
	var top int64
	for _, c := range cases {
		cells := map[string]string{}
		for _, s := range c.steps {
			procs++
			top = max(top, s.rss)
			cell := fmt.Sprintf("%s, %s (exit %d)", kib(s.rss), secs(s.dur), s.exit)
			if s.bad != "" {
				cell = fmt.Sprintf("%s, %s (%s)", kib(s.rss), secs(s.dur), oneLine(s.bad))
				bad = append(bad, c.name+" "+s.cmd)
			}
			if s.rss == 0 || s.rss >= rssBudgetKiB {
				cell = "**" + cell + "**"
				over = append(over, c.name+" "+s.cmd)
			}
			cells[s.cmd] = cell
		}
		row := []string{"`" + c.name + "`", kib(c.peak())}
		for _, col := range hostileColumns {
			row = append(row, cmpOr(cells[col], "–"))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
	if len(over) == 0 {
		fmt.Fprintf(&b, "Every one of the %d processes (%d cases) stayed under the 64 MiB budget; the largest peaked at %s.\n", procs, len(cases), kib(top))
	} else {
		fmt.Fprintf(&b, "**%d of the %d processes reached the 64 MiB budget or could not be measured: %s.**\n", len(over), procs, strings.Join(over, ", "))
	}
	if len(bad) > 0 {
		fmt.Fprintf(&b, "\n**Crashed, overran or exited outside 0–4: %s.**\n", strings.Join(bad, ", "))
	} else {
		b.WriteString("\nNo process crashed, overran its deadline or exited outside 0–4.\n")
	}
	return b.String()
}

// overBudget names the processes of cases that reached the budget, could
// not be measured, crashed or exited outside 0–4.
func overBudget(cases []*hostileCase) []string {
	var out []string
	for _, c := range cases {
		for _, s := range c.steps {
			if s.rss == 0 || s.rss >= rssBudgetKiB || s.bad != "" {
				out = append(out, c.name+" "+s.cmd)
			}
		}
	}
	return out
}

func secs(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

const hostileLegend = `The memory budget (SECURITY.md, "Limits"): the peak RSS of every process
over the hostile-input corpus (testdata/hostile) and at every documented
limit stays under **64 MiB**. Each case runs once, on a scratch root made the
way cmd/seedkeeper's TestHostile*Corpus tests make it: a NoCloud case runs
` + "`fetch --seed DIR`" + `, then ` + "`boot --root ROOT`" + ` with the seed in
ROOT/var/lib/cloud/seed/nocloud, then boot again (reading the imported seed),
then ` + "`status --root ROOT`" + `; a guestinfo case runs ` + "`fetch --root ROOT --source vmware`" + `
and boot through the stub vmware-rpctool of testdata/vmware; a config case runs
` + "`boot --root ROOT --config FILE`" + ` beside a good seed. The ` + "`limits/`" + ` cases are
made by the harness: inputs at every limit SECURITY.md documents and one past
it (a YAML or JSON document at 2 MiB and 65536 values and one byte or value
past, every seed file at 16 MiB in one seed and user-data one byte past,
guestinfo values expanding to their limits and past, the SmartOS values of one
read at their 16 MiB total over a unix socket), so the per-file limits are
measured summed, in one process; the ` + "`limits/image`" + ` cases run boot, status,
` + "`image check`" + ` and ` + "`image seal`" + ` over an image root at the aggregate bound of
its cloud-init configuration (4 MiB, 512 files) and past it, with every 1 MiB
file it reads at and past its bound, and with systemd's unit directories at
65536 entries in all (one unit lookup's budget) and 65537; the
` + "`limits/vmware-imc`" + ` case puts a VMware customization spec of the cloud-init
kind at all its bounds at once (cust.cfg 64 KiB, meta-data at the document
limits, user-data 16 MiB) on a root with empty guestinfo, runs fetch, then a
boot that applies and keeps it (` + "`--network apply`" + ` in a network namespace,
cloud-init owning the network, as root), then, with the spec gone from /run,
boot and status again over the kept copy (about 24 MiB); a second one applies
another spec at its bounds over the kept copy of the first (both compared,
then the new one written). Each nocloud case
also runs ` + "`seedkeeper watch --root ROOT --drivers veth`" + ` in a network
namespace of its own (root only) on a small seed, delivers the case's files
while it runs and adds a veth NIC, so that it reads the metadata again; its
peak is the whole daemon's life. Peak RSS is the child's ru_maxrss from wait4 (for the
guestinfo cases that takes in the stub shell scripts seedkeeper waited for,
which are smaller), beside its wall time. Largest case first; a cell in bold
reached the budget, and then skbench exits 1.

`

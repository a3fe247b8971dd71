package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func gunzip(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func (h *harness) seedRows(ctx context.Context, ci string) [][]string {
	iso := filepath.Join(h.tmp, "seed.iso")
	vfat := filepath.Join(h.tmp, "seed.vfat")
	dir, _ := filepath.Abs("testdata/nocloud/seed")
	if err := gunzip("testdata/nocloud/cloud-localds.iso.gz", iso); err != nil {
		return [][]string{{"seed reading", "–", "not measured: " + err.Error(), "–", "–", "–"}}
	}
	if err := gunzip("testdata/nocloud/cloud-localds.vfat.gz", vfat); err != nil {
		return [][]string{{"seed reading", "–", "not measured: " + err.Error(), "–", "–", "–"}}
	}
	fetch := func(m *measure, seed string) {
		p, err := runProc(ctx, nil, h.bin, "fetch", "--seed", seed, "--json")
		m.add(p, err == nil && p.exit == 0 && bytes.Contains(p.stdout, []byte(`"instance_id"`)))
	}
	oIso, oFat, oDir := &measure{}, &measure{}, &measure{}
	pIso, pFat, pDir := &measure{}, &measure{}, &measure{}
	isoWhy, fatWhy := tool("isoinfo", "genisoimage"), tool("mcopy", "mtools")
	h.record("seedkeeper fetch --seed seed.iso --json   (cloud-localds -N: ISO9660, Rock Ridge, Joliet)")
	h.record("isoinfo -R -i seed.iso -x /meta-data; … -x /user-data; … -x /network-config   (three processes)")
	h.record("seedkeeper fetch --seed seed.vfat --json   (cloud-localds -f vfat: FAT12)")
	h.record("mcopy -n -o -i seed.vfat ::meta-data ::user-data OUTDIR/")
	h.record("seedkeeper fetch --seed testdata/nocloud/seed --json")
	if ci == "" {
		h.record(python + " " + peerPy + " nocloud testdata/nocloud/seed")
	}
	out := filepath.Join(h.tmp, "mcopy")
	os.MkdirAll(out, 0o755)
	for range h.runs {
		fetch(oIso, iso)
		if isoWhy == "" {
			var total time.Duration
			ok := true
			for _, f := range []string{"/meta-data", "/user-data", "/network-config"} {
				p, err := runProc(ctx, nil, "isoinfo", "-R", "-i", iso, "-x", f)
				ok = ok && err == nil && p.exit == 0 && len(p.stdout) > 0
				total += p.dur
			}
			pIso.add(proc{dur: total}, ok)
		}
		fetch(oFat, vfat)
		if fatWhy == "" {
			p, err := runProc(ctx, nil, "mcopy", "-n", "-o", "-i", vfat, "::meta-data", "::user-data", out+"/")
			pFat.add(p, err == nil && p.exit == 0)
		}
		fetch(oDir, dir)
		if ci == "" {
			p, err := runProc(ctx, nil, python, peerPy, "nocloud", dir)
			pDir.add(p, err == nil && p.exit == 0)
		}
	}
	return [][]string{
		row("seed ISO9660 (meta-data, user-data, network-config)", "seedkeeper fetch --seed (reads, parses, normalizes)", oIso, "isoinfo -x, one process a file (extracts only)", pIso, isoWhy),
		row("seed FAT12 (meta-data, user-data)", "seedkeeper fetch --seed", oFat, "mcopy (extracts only)", pFat, fatWhy),
		row("seed directory", "seedkeeper fetch --seed DIR", oDir, "cloud-init DataSourceNoCloud.get_data", pDir, ci),
	}
}

// tool says why a tool is missing, or "".
func tool(name, pkg string) string {
	if _, err := exec.LookPath(name); err != nil {
		return name + " is not installed (apt-get install " + pkg + ")"
	}
	return ""
}

func writeFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o644)
}

// scratchRoot makes a root whose DMI says product; with disk set, the
// image is its block device vdb.
func scratchRoot(dir, product, disk string) error {
	if err := dmiRoot(dir, product, "QEMU", "0e9f5e21-6c3b-4d7a-9c1e-2b7a6d3f4e51"); err != nil {
		return err
	}
	if disk == "" {
		return nil
	}
	b, err := os.ReadFile(disk)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sys/class/block/vdb"), 0o755); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "dev/vdb"), string(b))
}

// dmiRoot makes a root whose DMI says product, vendor and product_uuid.
func dmiRoot(dir, product, vendor, uuid string) error {
	for k, v := range map[string]string{"product_name": product, "sys_vendor": vendor, "product_uuid": uuid} {
		if err := writeFile(filepath.Join(dir, "sys/class/dmi/id", k), v+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func kib(k int64) string {
	if k == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(k)/1024)
}

func (h *harness) footprint(ctx context.Context, ci string) string {
	var b strings.Builder
	if fi, err := os.Stat(h.bin); err == nil {
		fmt.Fprintf(&b, "- Binary: `seedkeeper` %.1f MiB (%d bytes), %s; mdata-get and friends are symlinks to it.\n",
			float64(fi.Size())/(1<<20), fi.Size(), elfInfo(h.bin))
	}
	// cold start
	ver, pver := &measure{}, &measure{}
	for range max(20, h.runs) {
		p, err := runProc(ctx, nil, h.bin, "--version")
		ver.add(p, err == nil && p.exit == 0)
	}
	h.record("seedkeeper --version")
	peerVer := "not measured: cloud-init is not installed"
	if _, err := os.Stat("/usr/bin/cloud-init"); err == nil {
		for range 5 {
			p, err := runProc(ctx, nil, "/usr/bin/cloud-init", "--version")
			pver.add(p, err == nil && p.exit == 0)
		}
		peerVer = cell(pver)
		h.record("cloud-init --version")
	}
	fmt.Fprintf(&b, "- Cold start, `seedkeeper --version`: %s; `cloud-init --version`: %s.\n\n", cell(ver), peerVer)

	// peak RSS
	b.WriteString("| process | peak RSS (median) | wall time median (p90) |\n|---|--:|--:|\n")
	iso := filepath.Join(h.tmp, "seed.iso")
	n := max(3, h.runs/4)
	type job struct {
		label string
		run   func(i int) (proc, bool)
	}
	smartEnv := []string{"SEEDKEEPER_MDATA=serial:" + h.pty}
	jobs := []job{
		{"seedkeeper boot, NoCloud cidata ISO as vdb (scratch root, --network plan)", func(i int) (proc, bool) {
			root := filepath.Join(h.tmp, fmt.Sprintf("nc-root-%d", i))
			if err := scratchRoot(root, "Standard PC (i440FX + PIIX, 1996)", iso); err != nil {
				return proc{}, false
			}
			p, err := runProc(ctx, nil, h.bin, "boot", "--root", root, "--network", "plan")
			return p, err == nil && p.exit == 0
		}},
		{"seedkeeper boot, SmartOS host on the pty (scratch root, --network plan)", func(i int) (proc, bool) {
			root := filepath.Join(h.tmp, fmt.Sprintf("sm-root-%d", i))
			if err := scratchRoot(root, "SmartDC HVM", ""); err != nil {
				return proc{}, false
			}
			p, err := runProc(ctx, smartEnv, h.bin, "boot", "--root", root, "--network", "plan")
			return p, err == nil && p.exit == 0
		}},
		{"mdata-get sdc:uuid", func(int) (proc, bool) {
			p, err := runProc(ctx, smartEnv, filepath.Join(h.tmp, "mdata-get"), "sdc:uuid")
			return p, err == nil && p.exit == 0
		}},
	}
	if ci == "" {
		jobs = append(jobs,
			job{"cloud-init: JoyentMetadataLegacySerialClient GET (python3)", func(int) (proc, bool) {
				p, err := runProc(ctx, nil, python, peerPy, "get", h.pty, "sdc:uuid")
				return p, err == nil && p.exit == 0
			}},
			job{"cloud-init: DataSourceSmartOS._get_data (python3)", func(int) (proc, bool) {
				p, err := runProc(ctx, nil, python, peerPy, "getdata", h.pty)
				return p, err == nil && p.exit == 0
			}},
			job{"cloud-init: DataSourceNoCloud.get_data on a seed dir (python3)", func(int) (proc, bool) {
				p, err := runProc(ctx, nil, python, peerPy, "nocloud", "testdata/nocloud/seed")
				return p, err == nil && p.exit == 0
			}})
	}
	h.record("seedkeeper boot --root ROOT --network plan   (ROOT: DMI files and /dev/vdb = the cidata ISO; or DMI SmartDC HVM with SEEDKEEPER_MDATA=serial:PTY)")
	for _, j := range jobs {
		m := &measure{}
		var last proc
		for i := range n {
			p, ok := j.run(i)
			m.add(p, ok)
			if !ok {
				last = p
			}
		}
		t := cell(m)
		if m.fails > 0 {
			t += " — " + oneLine(string(last.stderr))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", j.label, kib(m.rssMedian()), t)
	}
	b.WriteString("\n")
	b.WriteString(h.watchFootprint(ctx))
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

// procStatus reads VmRSS and VmHWM (KiB) and the CPU time of pid.
func procStatus(pid int) (rss, hwm int64, cpu time.Duration) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				rss = v
			case "VmHWM:":
				hwm = v
			}
		}
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 13 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				k, _ := strconv.ParseInt(f[12], 10, 64)
				cpu = time.Duration(u+k) * (time.Second / 100) // USER_HZ
			}
		}
	}
	return
}

// watchFootprint runs seedkeeper watch in a network namespace with veth
// allowlisted and churns veth pairs for h.watchFor, a shortened hour of
// link events; it reports the RSS before and after and the CPU time used.
func (h *harness) watchFootprint(ctx context.Context) string {
	const title = "- `seedkeeper watch` under link churn: "
	if os.Geteuid() != 0 {
		return title + "not measured: needs root for a network namespace\n"
	}
	name := fmt.Sprintf("skbench%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return title + "not measured: ip netns add: " + oneLine(string(out)) + "\n"
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	nsh, err := netns.GetFromName(name)
	if err != nil {
		return title + "not measured: " + err.Error() + "\n"
	}
	defer nsh.Close()
	nl, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return title + "not measured: " + err.Error() + "\n"
	}
	defer nl.Close()
	root := filepath.Join(h.tmp, "watch-root")
	if err := scratchRoot(root, "Standard PC (i440FX + PIIX, 1996)", filepath.Join(h.tmp, "seed.iso")); err != nil {
		return title + "not measured: " + err.Error() + "\n"
	}
	// watch acts only on the source this boot decided on, so boot first.
	if out, err := exec.CommandContext(ctx, h.bin, "boot", "--root", root, "--network", "off").CombinedOutput(); err != nil {
		return title + "not measured: boot before watch: " + err.Error() + ": " + oneLine(string(out)) + "\n"
	}
	argv := []string{"ip", "netns", "exec", name, h.bin, "watch", "--root", root, "--drivers", "veth"}
	h.record(strings.Join([]string{"ip netns exec NS seedkeeper watch --root ROOT --drivers veth"}, " ") +
		fmt.Sprintf("   (veth pairs added and removed in NS for %s)", h.watchFor))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = cleanEnv()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return title + "not measured: " + err.Error() + "\n"
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	select {
	case err := <-exited:
		return title + fmt.Sprintf("not measured: watch exited at once (%v): %s\n", err, oneLine(errb.String()))
	case <-time.After(2 * time.Second):
	}
	rss0, _, cpu0 := procStatus(pid)
	start := time.Now()
	pairs := 0
	tick := time.NewTicker(20 * time.Millisecond) // 50 pairs a second
	defer tick.Stop()
	var churnErr error
	for time.Since(start) < h.watchFor && ctx.Err() == nil && churnErr == nil {
		<-tick.C
		a := fmt.Sprintf("ska%d", pairs%1000)
		la := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: fmt.Sprintf("skb%d", pairs%1000)}
		if churnErr = nl.LinkAdd(la); churnErr != nil {
			break
		}
		if l, err := nl.LinkByName(a); err == nil {
			churnErr = nl.LinkDel(l)
		}
		pairs++
	}
	time.Sleep(time.Second) // let the last events arrive
	rss1, hwm, cpu1 := procStatus(pid)
	select {
	case err := <-exited:
		return title + fmt.Sprintf("**watch exited during the churn** (%v): %s\n", err, oneLine(errb.String()))
	default:
	}
	stop()
	s := fmt.Sprintf("%d veth pairs added and removed in %s (%d link events), allowlist veth: RSS %s → %s (peak %s), CPU %s",
		pairs, time.Since(start).Round(time.Second), pairs*4, kib(rss0), kib(rss1), kib(hwm), (cpu1 - cpu0).Round(10*time.Millisecond))
	if churnErr != nil {
		s += fmt.Sprintf(" (churn stopped: %v)", churnErr)
	}
	return title + s + ".\n"
}

// goBench runs (or reads) the Go benchmarks and renders their lines.
func (h *harness) goBench(ctx context.Context) string {
	var out []byte
	if h.gobench != "" {
		b, err := os.ReadFile(h.gobench)
		if err != nil {
			return "not measured: " + err.Error() + "\n"
		}
		out = b
		h.record("go test -run '^$' -bench . -benchmem ./...   (output in " + h.gobench + ")")
	} else {
		if os.Geteuid() != 0 {
			return "not measured: the integration benchmarks need root (network namespaces)\n"
		}
		bt := "10x"
		if h.quick {
			bt = "1x"
		}
		// The mdata ones beside the session code: the drain, the
		// inactivity timeout (a reply cut off), the nudge (a host restart).
		args := []string{"test", "-run", "^$", "-bench",
			"BenchmarkIntegration(Storm|LinkAddToApplied|PlanApply|DrainPTY|CutOffRecoveryPTY|RestartRecoveryPTY|SessionGetPTY|GetPTY)$",
			"-benchtime", bt, "./mdata", "./hotplug", "./netcfg/apply"}
		h.record("go " + strings.Join(args, " "))
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		o, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			return "not measured: go test: " + oneLine(string(o)) + "\n"
		}
		out = o
	}
	var b strings.Builder
	b.WriteString("| package | benchmark | runs | figures |\n|---|---|--:|---|\n")
	pkg := ""
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "pkg:" {
			pkg = strings.TrimPrefix(f[1], "github.com/seedkeeper/seedkeeper/")
		}
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		var figs []string
		for i := 2; i+1 < len(f); i += 2 {
			figs = append(figs, f[i]+" "+f[i+1])
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", pkg, f[0], f[1], strings.Join(figs, ", "))
	}
	return b.String()
}

package main

// The corpus at every documented limit: inputs as large as SECURITY.md's
// limits table lets them be, made here rather than committed (they are
// tens of MiB), and the per-file limits summed in one boot (every seed
// file at its limit at once), measured like the committed corpus.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/seedimage"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// atLimitYAML is a YAML document just under both yamlx.MaxDocument and
// yamlx.MaxNodes: lines of a list, each a value and its "-". head comes
// first (it must be a mapping whose last key takes the list).
func atLimitYAML(head string) string {
	const line = 67 // "  - " + 62 letters + "\n"
	n := min((yamlx.MaxDocument-len(head)-64)/line, yamlx.MaxNodes/2-64)
	return head + strings.Repeat("  - "+strings.Repeat("a", line-5)+"\n", n)
}

// atLimitJSON is a JSON array just under the same two limits.
func atLimitJSON() string {
	const item = 66 // `"` + 63 letters + `",`
	n := min((yamlx.MaxDocument-64)/item, yamlx.MaxNodes/2-64)
	return "[" + strings.Repeat(`"`+strings.Repeat("a", item-3)+`",`, n-1) + `"a"]`
}

func gzb64(s string) string {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte(s))
	zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// filler is n bytes of a cloud-config comment: user-data at its limit.
func filler(n int) string {
	head := "#cloud-config\n"
	return head + strings.Repeat("#"+strings.Repeat("x", 62)+"\n", (n-len(head))/64)
}

const limitNetwork = "version: 2\nethernets:\n  e0: {match: {macaddress: '52:54:00:12:34:56'}, dhcp4: true}\nx:\n"

// The cases at the limits. Their files are made, and the SmartOS host
// serves its values, in helper processes (skbench limits-gen, skbench
// mdata-host): Linux starts a child's peak RSS at its parent's, so the
// process that starts seedkeeper never holds tens of MiB itself.
type limitCase struct {
	name string
	kind string // nocloud, guestinfo, image (files by system path in the root)
	// files are made only in the helper (the parent must stay small).
	files func() map[string]string
}

func limitCaseList() []limitCase {
	seedMax := int(seedimage.MaxFileSize)
	meta := func() string { return atLimitYAML("instance-id: iid-limits\nlist:\n") }
	return []limitCase{
		{"limits/nocloud: every file at its limit", "nocloud", func() map[string]string {
			return map[string]string{
				"meta-data": meta(), "network-config": atLimitYAML(limitNetwork),
				"user-data": filler(seedMax), "vendor-data": filler(seedMax),
			}
		}},
		{"limits/nocloud: meta-data at the document limits", "nocloud", func() map[string]string {
			return map[string]string{"meta-data": meta(), "user-data": "#cloud-config\n"}
		}},
		{"limits/nocloud: network-config at the document limits", "nocloud", func() map[string]string {
			return map[string]string{
				"meta-data": "instance-id: iid-limits\n", "network-config": atLimitYAML(limitNetwork), "user-data": "#cloud-config\n",
			}
		}},
		{"limits/nocloud: meta-data one value past the limit", "nocloud", func() map[string]string {
			return map[string]string{
				"meta-data": meta() + strings.Repeat("  - a\n", 200), "user-data": "#cloud-config\n",
			}
		}},
		{"limits/guestinfo: every value at its limit", "guestinfo", func() map[string]string {
			return map[string]string{
				"metadata": gzb64(meta()), "metadata.encoding": "gzip+base64",
				"userdata": gzb64(filler(seedMax)), "userdata.encoding": "gzip+base64",
				"vendordata": gzb64(filler(seedMax)), "vendordata.encoding": "gzip+base64",
			}
		}},
		{"limits/guestinfo: every value at its limit, base64 (not compressed)", "guestinfo", func() map[string]string {
			b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
			return map[string]string{
				"metadata": b64(meta()), "metadata.encoding": "base64",
				"userdata": b64(filler(seedMax)), "userdata.encoding": "base64",
				"vendordata": b64(filler(seedMax)), "vendordata.encoding": "base64",
			}
		}},
		{"limits/guestinfo: an 11 KB gzip metadata", "guestinfo", func() map[string]string {
			return map[string]string{
				"metadata": gzb64("[" + strings.Repeat("a,", 8<<20) + "a]"), "metadata.encoding": "gzip+base64",
			}
		}},
		{"limits/nocloud: user-data at 16 MiB exactly", "nocloud", func() map[string]string {
			return map[string]string{"meta-data": "instance-id: iid-limits\n", "user-data": exactly("#cloud-config\n", seedMax)}
		}},
		{"limits/nocloud: user-data one byte past 16 MiB", "nocloud", func() map[string]string {
			return map[string]string{"meta-data": "instance-id: iid-limits\n", "user-data": exactly("#cloud-config\n", seedMax+1)}
		}},
		{"limits/nocloud: meta-data one byte past 2 MiB", "nocloud", func() map[string]string {
			return map[string]string{"meta-data": exactly("instance-id: iid-limits\n", yamlx.MaxDocument+1), "user-data": "#cloud-config\n"}
		}},
		{"limits/guestinfo: user-data one byte past 16 MiB, gzip", "guestinfo", func() map[string]string {
			return map[string]string{
				"metadata": gzb64("instance-id: iid-limits\n"), "metadata.encoding": "gzip+base64",
				"userdata": gzb64(exactly("#cloud-config\n", seedMax+1)), "userdata.encoding": "gzip+base64",
			}
		}},
		{"limits/image: cloud.cfg and cloud.cfg.d at their 4 MiB total", "image", func() map[string]string {
			return cloudConfigAt(fsutil.ConfigSetTotal)
		}},
		{"limits/image: cloud.cfg and cloud.cfg.d one byte past their 4 MiB total", "image", func() map[string]string {
			return cloudConfigAt(fsutil.ConfigSetTotal + 1)
		}},
		{"limits/image: cloud.cfg and cloud.cfg.d at 512 files", "image", func() map[string]string {
			return cloudConfigFiles(fsutil.ConfigSetFiles)
		}},
		{"limits/image: cloud.cfg and cloud.cfg.d at 513 files", "image", func() map[string]string {
			return cloudConfigFiles(fsutil.ConfigSetFiles + 1)
		}},
		{"limits/image: every file read under the root at 1 MiB", "image", func() map[string]string {
			return smallFilesAt(fsutil.SmallFile)
		}},
		{"limits/image: every file read under the root one byte past 1 MiB", "image", func() map[string]string {
			return smallFilesAt(fsutil.SmallFile + 1)
		}},
		{"limits/image: the unit directories at 65536 entries in all", "image", func() map[string]string {
			return unitDirEntries(65536)
		}},
		{"limits/image: the unit directories at 65537 entries in all", "image", func() map[string]string {
			return unitDirEntries(65537)
		}},
		{"limits/vmware-imc: a spec at its bounds, applied, kept and read again from the kept copy", "vmware-imc", imcSpecAtBounds},
		{"limits/vmware-imc: a spec at its bounds applied over another one kept at its bounds", "vmware-imc-replace", imcSpecAtBounds},
	}
}

// The VMware customization spec's bounds (datasource: maxIMCSpec for
// cust.cfg; the cloud-init kind's meta-data a YAML document, its
// user-data a guestinfo value at most).
const (
	imcSpecMax     = 64 << 10
	imcUserDataMax = 16 << 20
)

// imcSpecAtBounds is a spec of the cloud-init kind at every bound at once,
// as VMware Tools leaves it (by system path in the root): cust.cfg at
// 64 KiB, its meta-data at the document limits, its user-data at 16 MiB.
// Applied, it is kept whole (without a password it has none of) in the
// largest kept copy there can be.
func imcSpecAtBounds() map[string]string {
	cfg := exactly("[CLOUDINIT]\nMETADATA = metadata\nUSERDATA = userdata\n[MISC]\nMARKER-ID = limits-0001\n", imcSpecMax)
	return map[string]string{
		"/var/run/vmware-imc/cust.cfg": cfg,
		"/var/run/vmware-imc/metadata": atLimitYAML("instance-id: iid-imc-limits\nlocal-hostname: imc-limits\nlist:\n"),
		"/var/run/vmware-imc/userdata": filler(imcUserDataMax),
		// Boot changes no link: cloud-init owns the network.
		"/etc/seedkeeper/config.yaml": "network: {owner: cloud-init}\n",
	}
}

// exactly is head followed by comment lines, n bytes in all.
func exactly(head string, n int) string {
	line := "#" + strings.Repeat("x", 62) + "\n"
	rest := n - len(head)
	s := head + strings.Repeat(line, rest/len(line))
	if r := rest % len(line); r > 0 {
		s += strings.Repeat("#", r-1) + "\n"
	}
	return s
}

// jsonExactly is a JSON object of n bytes.
func jsonExactly(n int) string {
	return `{"pad":"` + strings.Repeat("x", n-11) + "\"}\n"
}

// imageBase is an image root's own files: cloud-init's configuration with
// seedkeeper's drop-in, and seedkeeper's units, enabled.
func imageBase() map[string]string {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	return map[string]string{
		"/etc/cloud/cloud.cfg":                         "datasource_list: [NoCloud, None]\n",
		"/etc/cloud/cloud.cfg.d/95-seedkeeper.cfg":     read("packaging/95-seedkeeper.cfg"),
		"/lib/systemd/system/seedkeeper-boot.service":  read("packaging/seedkeeper-boot.service"),
		"/lib/systemd/system/seedkeeper-watch.service": read("packaging/seedkeeper-watch.service"),
		"/lib/systemd/system/cloud-init-local.service": "[Unit]\nDescription=cloud-init local\n[Service]\nExecStart=/bin/true\n",
		"/etc/machine-id":                              "",
	}
}

// cloudConfigAt is an image whose cloud.cfg and cloud.cfg.d hold n bytes
// together, each file under its own bound.
func cloudConfigAt(n int) map[string]string {
	files := imageBase()
	left := n - len(files["/etc/cloud/cloud.cfg"]) - len(files["/etc/cloud/cloud.cfg.d/95-seedkeeper.cfg"])
	for i := 0; left > 0; i++ {
		k := min(left, fsutil.SmallFile-4096)
		files[fmt.Sprintf("/etc/cloud/cloud.cfg.d/%02d-pad.cfg", i)] = exactly("", k)
		left -= k
	}
	return files
}

// cloudConfigFiles is an image whose cloud.cfg and cloud.cfg.d are n
// files.
func cloudConfigFiles(n int) map[string]string {
	files := imageBase()
	for i := range n - 2 {
		files[fmt.Sprintf("/etc/cloud/cloud.cfg.d/%04d-x.cfg", i)] = "{}\n"
	}
	return files
}

// smallFilesAt is an image whose files that image check, seal, status
// and boot read under the root with the SmallFile bound are n bytes each.
func smallFilesAt(n int) map[string]string {
	files := imageBase()
	files["/etc/cloud/cloud.cfg"] = exactly("datasource_list: [NoCloud, None]\n", n)
	files["/lib/systemd/system/seedkeeper-boot.service"] = exactly(files["/lib/systemd/system/seedkeeper-boot.service"], n)
	files["/etc/network/interfaces"] = exactly("source /etc/network/interfaces.d/*\n", n)
	files["/etc/machine-id"] = exactly("", n)
	for _, p := range []string{"status.json", "identity.json", "network-receipt.json", "changes.json"} {
		files["/var/lib/seedkeeper/"+p] = jsonExactly(n)
	}
	files["/etc/seedkeeper/config.yaml"] = exactly("", n)
	return files
}

// unitDirEntries is an image with n unit files in /etc/systemd/system.
func unitDirEntries(n int) map[string]string {
	files := imageBase()
	for p := range files {
		if strings.HasPrefix(p, "/etc/systemd/system/") || strings.HasPrefix(p, "/lib/systemd/system/") {
			n-- // the base's units count in the lookup's budget
		}
	}
	for i := range n {
		files[fmt.Sprintf("/etc/systemd/system/u%05d.service", i)] = ""
	}
	return files
}

// smartosLimitValues are the SmartOS values of one read at their total
// (MaxSmartOSTotal, 16 MiB): user-data near the line limit, sdc:nics at
// the document limits.
func smartosLimitValues() map[string]string {
	nics := atLimitJSON()
	return map[string]string{"sdc:nics": nics, "user-data": filler(16<<20 - len(nics) - 4096)}
}

// limitsGen makes the scratch roots of every case under dir: dir/N/seed
// and dir/N/root for a NoCloud case, dir/N/{bin,guestinfo,root} for a
// guestinfo case, dir/smartos/root.
//
// only, when not "", keeps the cases whose name holds it.
func limitsGen(dir, only string) error {
	for i, lc := range limitCaseList() {
		if !strings.Contains(lc.name, only) {
			continue
		}
		base := filepath.Join(dir, fmt.Sprint(i))
		switch lc.kind {
		case "nocloud":
			root := filepath.Join(base, "root")
			if err := hostileRoot(root); err != nil {
				return err
			}
			for n, data := range lc.files() {
				for _, p := range []string{filepath.Join(base, "seed", n), filepath.Join(root, "var/lib/cloud/seed/nocloud", n)} {
					if err := writeFileMode(p, data, 0o600); err != nil {
						return err
					}
				}
			}
		case "guestinfo":
			if _, _, err := guestinfoRoot(base, lc.files()); err != nil {
				return err
			}
		case "image":
			root := filepath.Join(base, "root")
			if err := hostileRoot(root); err != nil {
				return err
			}
			for p, data := range lc.files() {
				if err := writeFileMode(filepath.Join(root, p), data, 0o644); err != nil {
					return err
				}
			}
		case "vmware-imc", "vmware-imc-replace":
			// A VMware root whose guestinfo is empty: the spec is
			// the source.
			_, root, err := guestinfoRoot(base, nil)
			if err != nil {
				return err
			}
			for p, data := range lc.files() {
				if err := writeFileMode(filepath.Join(root, p), data, 0o600); err != nil {
					return err
				}
			}
		}
	}
	return dmiRoot(filepath.Join(dir, "smartos", "root"), "SmartDC HVM", "Joyent", "4A1B2C3D-0000-1111-2222-333344445555")
}

// mdataHost serves the simulated host with smartosLimitValues on the unix
// socket sock until it is killed.
func mdataHost(sock string) error {
	st := mdatatest.Default()
	for k, v := range smartosLimitValues() {
		st.SetString(k, v)
	}
	h := mdatatest.NewHost(st)
	if _, err := h.ListenUnix(sock + ".tmp"); err != nil {
		return err
	}
	// Renamed once listening: the parent waits for the name.
	if err := os.Rename(sock+".tmp", sock); err != nil {
		return err
	}
	select {}
}

// limitCases runs the cases at the limits in a scratch directory.
//
// only, when not "", keeps the cases whose name holds it.
func limitCases(ctx context.Context, bin, dir, only string, logf func(string, ...any)) ([]*hostileCase, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf("hostile: making the corpus at the limits")
	if out, err := exec.CommandContext(ctx, self, "limits-gen", dir, only).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("skbench limits-gen: %v: %s", err, out)
	}
	ns, err := newWatchNS()
	if err != nil {
		logf("hostile: seedkeeper watch not measured: %v", err)
	} else {
		defer ns.close()
	}
	var cases []*hostileCase
	for i, lc := range limitCaseList() {
		if !strings.Contains(lc.name, only) {
			continue
		}
		c := &hostileCase{name: lc.name}
		logf("hostile: %s", c.name)
		base := filepath.Join(dir, fmt.Sprint(i))
		root := filepath.Join(base, "root")
		switch lc.kind {
		case "nocloud":
			c.runStep(ctx, "fetch", nil, bin, "fetch", "--seed", filepath.Join(base, "seed"))
			c.runStep(ctx, "boot", nil, bin, "boot", "--root", root, "--network", "plan")
			c.runStep(ctx, "second boot", nil, bin, "boot", "--root", root, "--network", "plan")
			c.runStep(ctx, "status", nil, bin, "status", "--root", root)
			if ns != nil {
				c.watchStep(ctx, ns, bin, base, logf)
			}
		case "guestinfo":
			env := []string{"PATH=" + filepath.Join(base, "bin") + ":/usr/bin:/bin", "GUESTINFO_DIR=" + filepath.Join(base, "guestinfo")}
			c.runStep(ctx, "fetch", env, bin, "fetch", "--root", root, "--source", "vmware")
			c.runStep(ctx, "boot", env, bin, "boot", "--root", root, "--network", "plan")
			c.runStep(ctx, "status", env, bin, "status", "--root", root)
		case "image":
			// boot first: it reads the image's cloud-init
			// configuration (its default user) and units; seal last,
			// as it changes the root.
			c.runStep(ctx, "boot", nil, bin, "boot", "--root", root, "--network", "plan")
			c.runStep(ctx, "status", nil, bin, "status", "--root", root)
			c.runStep(ctx, "image check", nil, bin, "image", "check", "--root", root)
			c.runStep(ctx, "image seal", nil, bin, "image", "seal", "--root", root)
		case "vmware-imc", "vmware-imc-replace":
			if err := c.imcKeptSteps(ctx, ns, bin, base, lc.kind == "vmware-imc-replace", logf); err != nil {
				return nil, err
			}
		}
		cases = append(cases, c)
	}

	c := &hostileCase{name: "limits/smartos: the values of one read at their total"}
	if !strings.Contains(c.name, only) {
		return cases, ctx.Err()
	}
	logf("hostile: %s", c.name)
	sock := filepath.Join(dir, "mdata.sock")
	host := exec.CommandContext(ctx, self, "mdata-host", sock)
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		return nil, err
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	root := filepath.Join(dir, "smartos", "root")
	env := []string{"SEEDKEEPER_MDATA=unix:" + sock}
	c.runStep(ctx, "fetch", env, bin, "fetch", "--root", root, "--source", "smartos")
	c.runStep(ctx, "boot", env, bin, "boot", "--root", root, "--network", "plan")
	c.runStep(ctx, "second boot", env, bin, "boot", "--root", root, "--network", "plan")
	c.runStep(ctx, "status", env, bin, "status", "--root", root)
	return append(cases, c), ctx.Err()
}

// guestinfoRoot makes a VMware scratch root whose stub vmware-rpctool
// answers with files (the guestinfo keys without "guestinfo.").
func guestinfoRoot(base string, files map[string]string) (env []string, root string, err error) {
	stub, gi := filepath.Join(base, "bin"), filepath.Join(base, "guestinfo")
	for _, f := range []string{"vmware-rpctool", "vmtoolsd", "guestinfo-stub.sh"} {
		b, err := os.ReadFile(filepath.Join("testdata/vmware", f))
		if err != nil {
			return nil, "", err
		}
		if err := writeFileMode(filepath.Join(stub, f), string(b), 0o755); err != nil {
			return nil, "", err
		}
	}
	for k, v := range files {
		if err := writeFileMode(filepath.Join(gi, "guestinfo."+k), v, 0o600); err != nil {
			return nil, "", err
		}
	}
	root = filepath.Join(base, "root")
	if err := dmiRoot(root, "VMware7,1", "VMware, Inc.", "4213ABCD-1234-5678-9ABC-DEF012345678"); err != nil {
		return nil, "", err
	}
	return []string{"PATH=" + stub + ":/usr/bin:/bin", "GUESTINFO_DIR=" + gi}, root, nil
}

// imcKeptSteps runs the spec case: fetch reads the spec; boot applies it,
// reporting through the stub vmware-rpctool, and keeps it (a boot that
// changes the machine: in the network namespace ns, with cloud-init
// owning the network, so that no link is touched); with the spec gone
// from /run, as after a reboot, the second boot and status read the
// kept copy. With replace, the second boot applies another spec (its
// marker changed) over the one kept: the kept copy on disk and the new
// one compared, then written. Without a namespace (not root) boot only
// plans, keeps nothing, and the kept copy is not measured.
func (c *hostileCase) imcKeptSteps(ctx context.Context, ns *watchNS, bin, base string, replace bool, logf func(string, ...any)) error {
	root := filepath.Join(base, "root")
	env := []string{"PATH=" + filepath.Join(base, "bin") + ":/usr/bin:/bin", "GUESTINFO_DIR=" + filepath.Join(base, "guestinfo")}
	c.runStep(ctx, "fetch", env, bin, "fetch", "--root", root, "--source", "vmware")
	if ns == nil {
		logf("hostile: %s: boot only plans (no network namespace): the kept copy is not measured", c.name)
		c.runStep(ctx, "boot", env, bin, "boot", "--root", root, "--network", "plan")
		return nil
	}
	c.runStep(ctx, "boot", env, "ip", "netns", "exec", ns.name, bin, "boot", "--root", root, "--network", "apply")
	kept := filepath.Join(root, "var/lib/seedkeeper/vmware-imc-spec.json")
	fi, err := os.Stat(kept)
	if err != nil {
		c.steps[len(c.steps)-1].bad = "kept no spec"
		return nil
	}
	logf("hostile: %s: kept copy %d bytes", c.name, fi.Size())
	if replace {
		cfg := filepath.Join(root, "var/run/vmware-imc/cust.cfg")
		b, err := os.ReadFile(cfg)
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg, bytes.Replace(b, []byte("limits-0001"), []byte("limits-0002"), 1), 0o600); err != nil {
			return err
		}
		c.runStep(ctx, "second boot", env, "ip", "netns", "exec", ns.name, bin, "boot", "--root", root, "--network", "apply")
		if fi2, err := os.Stat(kept); err != nil || fi2.ModTime().Equal(fi.ModTime()) && fi2.Size() == fi.Size() {
			c.steps[len(c.steps)-1].bad = "the kept spec was not replaced"
		}
		return nil
	}
	if err := os.RemoveAll(filepath.Join(root, "var/run/vmware-imc")); err != nil {
		return err
	}
	c.runStep(ctx, "second boot", env, bin, "boot", "--root", root, "--network", "plan")
	c.runStep(ctx, "status", env, bin, "status", "--root", root)
	return nil
}

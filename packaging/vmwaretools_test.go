package packaging

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/vmtools"
)

// What VMware Tools does with a customization spec vCenter sends, as
// open-vm-tools decides it (its deployPkg plugin and libDeployPkg; the
// rule is written out in docs/cloud-init.md, "VMware guest
// customization"). The tests below apply that rule to the shipped drop-in
// on the images it meets: no Tools runs here (CI has none), so the rule is
// pinned as a table over the files the package ships.

// toolsOutcome is what Tools does with a spec.
type toolsOutcome string

const (
	// handOver: the spec is copied to /var/run/vmware-imc for the
	// guest's agent; Tools reports "running", does not reboot, and waits
	// for nothing: the agent reports the end.
	handOver toolsOutcome = "handed to the agent"
	// ownScripts: Tools runs the customization scripts of the package
	// (the distribution's network files, hostname), reports the end
	// itself, waits for cloud-init (wait-cloudinit-timeout) and reboots.
	ownScripts toolsOutcome = "Tools' own customization"
	// refusedOldCloudInit: a spec of the cloud-init kind with a
	// cloud-init older than 21.1; reported as error 8, nothing done.
	refusedOldCloudInit toolsOutcome = "refused: cloud-init too old"
	// refusedByAdmin: tools.conf [deployPkg] enable-customization =
	// false; reported as error 7, nothing done.
	refusedByAdmin toolsOutcome = "refused by tools.conf"
)

// toolsImage is what Tools looks at in the guest.
type toolsImage struct {
	root             string // /etc/cloud and /etc/vmware-tools under it
	cloudInit        bool   // /usr/bin/cloud-init -v exits 0
	cloudInitVersion [2]int // its major and minor version
}

// toolsReadsConfD: open-vm-tools 12.4 and later read
// disable_vmware_customization from cloud.cfg.d before cloud.cfg; earlier
// ones read cloud.cfg only.
type toolsVersion struct {
	name     string
	readsCfD bool
}

var (
	tools122 = toolsVersion{"open-vm-tools 12.2 (Debian 12)", false}
	tools124 = toolsVersion{"open-vm-tools 12.4 and later", true}
)

// toolsFlag returns the value of the key in one file as Tools reads it
// (vmtools.CustomizationFlag): "true", "false", or "" when unset (or the
// file cannot be read). Tools reads a line at a time into 256 bytes; the
// drop-in's lines are shorter.
func toolsFlag(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return vmtools.CustomizationFlag(b)
}

// toolsCustomizationEnabled is IsCloudInitCustomizationEnabled: in
// cloud.cfg.d, the regular files named *.cfg, from the last in name order
// to the first, until one sets the key; then cloud.cfg. true when the
// value found is false.
func toolsCustomizationEnabled(root string, v toolsVersion) bool {
	flag := ""
	if v.readsCfD {
		dir := filepath.Join(root, "etc/cloud/cloud.cfg.d")
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			// scandir's d_type: DT_REG only, so a link is skipped.
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".cfg") && e.Name() != ".cfg" {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for i := len(names) - 1; i >= 0 && flag == ""; i-- {
			flag = toolsFlag(filepath.Join(dir, names[i]))
		}
	}
	if flag == "" {
		flag = toolsFlag(filepath.Join(root, "etc/cloud/cloud.cfg"))
	}
	return flag == "false"
}

// toolsConfEnabled reads tools.conf's [deployPkg] enable-customization
// (default true) as GLib's key file reads a boolean.
func toolsConfEnabled(root string) bool {
	f, err := os.Open(filepath.Join(root, "etc/vmware-tools/tools.conf"))
	if err != nil {
		return true
	}
	defer f.Close()
	group, enabled := "", true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			group = l[1 : len(l)-1]
		case group == "deployPkg" && strings.HasPrefix(l, "enable-customization"):
			if k, val, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "enable-customization" {
				val = strings.TrimSpace(val)
				enabled = !(val == "false" || val == "0")
			}
		}
	}
	return enabled
}

// toolsDecide is DeployPkgExecDeploy and Deploy's choice
// (UseCloudInitWorkflow): rawData is a spec of the cloud-init kind (its
// package holds a "metadata" file).
func toolsDecide(img toolsImage, v toolsVersion, rawData bool) toolsOutcome {
	switch {
	case !toolsConfEnabled(img.root):
		return refusedByAdmin
	case !img.cloudInit:
		return ownScripts
	case rawData:
		if img.cloudInitVersion[0] < 21 || img.cloudInitVersion[0] == 21 && img.cloudInitVersion[1] < 1 {
			return refusedOldCloudInit
		}
		return handOver
	case toolsCustomizationEnabled(img.root, v):
		return handOver
	}
	return ownScripts
}

// oldDropIn is the key as the drop-in set it before: Tools then kept a
// traditional spec for its own scripts.
const oldDropIn = "datasource_list: [NoCloud, None]\ndisable_vmware_customization: true\n"

// The shipped drop-in under the rule: every case names the image (what
// cloud.cfg and the other cloud.cfg.d files say) and what Tools does with
// a traditional spec and with one of the cloud-init kind.
func TestVMwareToolsHandOff(t *testing.T) {
	t.Parallel()
	ours := readFileT(t, dropIn)
	debian12 := [2]int{22, 4}
	cases := []struct {
		name      string
		cloudCfg  string            // /etc/cloud/cloud.cfg's key line, "" for none (Debian's, Ubuntu's)
		confD     map[string]string // cloud.cfg.d beside the drop-in (the drop-in itself: dropIn)
		link      bool              // the drop-in is a link into cloud.cfg.d
		toolsConf string
		noCI      bool
		ciVersion [2]int
		tools     toolsVersion
		trad, raw toolsOutcome
	}{
		{name: "the drop-in, Debian's cloud.cfg, Tools 12.4+",
			confD: map[string]string{dropIn: ours}, tools: tools124, trad: handOver, raw: handOver},
		// Tools before 12.4 read cloud.cfg alone: the image has to say
		// false there (docs/cloud-init.md).
		{name: "the drop-in, Debian's cloud.cfg, Tools 12.2",
			confD: map[string]string{dropIn: ours}, tools: tools122, trad: ownScripts, raw: handOver},
		{name: "the drop-in, false in cloud.cfg (RHEL's, or the image's), Tools 12.2",
			cloudCfg: "disable_vmware_customization: false\n", confD: map[string]string{dropIn: ours}, tools: tools122, trad: handOver, raw: handOver},
		{name: "the drop-in after an image file that says true",
			confD: map[string]string{"50-image.cfg": "disable_vmware_customization: true\n", dropIn: ours}, tools: tools124, trad: handOver, raw: handOver},
		{name: "the drop-in over Photon's cloud.cfg (true)",
			cloudCfg: "disable_vmware_customization: true\n", confD: map[string]string{dropIn: ours}, tools: tools124, trad: handOver, raw: handOver},
		{name: "an admin's 99-*.cfg that says true wins",
			confD: map[string]string{dropIn: ours, "99-admin.cfg": "disable_vmware_customization: true # ours\n"}, tools: tools124, trad: ownScripts, raw: handOver},
		{name: "an admin's 99-*.cfg in capitals is not read by Tools",
			confD: map[string]string{dropIn: ours, "99-admin.cfg": "disable_vmware_customization: True\n"}, tools: tools124, trad: handOver, raw: handOver},
		{name: "the drop-in as a link is skipped",
			confD: map[string]string{dropIn: ours}, link: true, tools: tools124, trad: ownScripts, raw: handOver},
		{name: "tools.conf refuses every spec",
			confD: map[string]string{dropIn: ours}, toolsConf: "[deployPkg]\nenable-customization = false\n", tools: tools124, trad: refusedByAdmin, raw: refusedByAdmin},
		{name: "no cloud-init",
			confD: map[string]string{dropIn: ours}, noCI: true, tools: tools124, trad: ownScripts, raw: ownScripts},
		{name: "cloud-init 20.4",
			confD: map[string]string{dropIn: ours}, ciVersion: [2]int{20, 4}, tools: tools124, trad: handOver, raw: refusedOldCloudInit},
		// What the drop-in said before: a traditional spec stayed with
		// Tools' own scripts.
		{name: "the former drop-in (true)",
			confD: map[string]string{dropIn: oldDropIn}, tools: tools124, trad: ownScripts, raw: handOver},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			d := filepath.Join(root, "etc/cloud/cloud.cfg.d")
			writeFileT(t, filepath.Join(root, "etc/cloud/cloud.cfg"), "datasource_list: [NoCloud, None]\n"+c.cloudCfg)
			for name, body := range c.confD {
				p := filepath.Join(d, name)
				if c.link && name == dropIn {
					writeFileT(t, filepath.Join(root, "usr/share/seedkeeper", name), body)
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink("../../../usr/share/seedkeeper/"+name, p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				writeFileT(t, p, body)
			}
			if c.toolsConf != "" {
				writeFileT(t, filepath.Join(root, "etc/vmware-tools/tools.conf"), c.toolsConf)
			}
			img := toolsImage{root: root, cloudInit: !c.noCI, cloudInitVersion: c.ciVersion}
			if img.cloudInitVersion == [2]int{} {
				img.cloudInitVersion = debian12
			}
			if got := toolsDecide(img, c.tools, false); got != c.trad {
				t.Errorf("%s, traditional spec: %s; want %s", c.tools.name, got, c.trad)
			}
			if got := toolsDecide(img, c.tools, true); got != c.raw {
				t.Errorf("%s, cloud-init kind: %s; want %s", c.tools.name, got, c.raw)
			}
		})
	}
}

// The drop-in says false once, on a line of its own that Tools' match
// takes, and nothing else in it matches.
func TestDropInToolsLine(t *testing.T) {
	t.Parallel()
	var lines []string
	for _, l := range strings.SplitAfter(readFileT(t, dropIn), "\n") {
		if vmtools.CustomizationFlagLine(l) {
			lines = append(lines, vmtools.CustomizationFlag([]byte(l)))
		}
	}
	if !slices.Equal(lines, []string{"false"}) {
		t.Errorf("Tools reads disable_vmware_customization from the drop-in as %v; want one line, false", lines)
	}
	// The match is Tools', not YAML's: a comment or another spelling is
	// not read.
	for l, want := range map[string]bool{
		"disable_vmware_customization: false\n":         true,
		"  disable_vmware_customization : true  # x\n":  true,
		"disable_vmware_customization: False\n":         false,
		"disable_vmware_customization: no\n":            false,
		"# disable_vmware_customization: false\n":       false,
		"disable_vmware_customization: false # x y z\n": true,
		"disable_vmware_customization: false#x\n":       false,
	} {
		if got := vmtools.CustomizationFlagLine(l); got != want {
			t.Errorf("Tools' match of %q: %v, want %v", l, got, want)
		}
	}
}

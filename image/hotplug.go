package image

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// What turns cloud-init's own hotplug on: the udev rule its install_hotplug
// module writes (22.4 and 25.x name it differently), the file
// "cloud-init devel hotplug-hook enable" writes (24.x on), and
// "updates: {network: {when: [hotplug]}}" in its system config or in the
// user-data.
var cloudInitHotplugFiles = []string{
	"/etc/udev/rules.d/10-cloud-init-hook-hotplug.rules",
	"/etc/udev/rules.d/90-cloud-init-hook-hotplug.rules",
	paths.CloudDir + "/hotplug.enabled",
}

// checkCloudInitHotplug: cloud-init's hotplug hook applies the
// datasource's network-config to every NIC added whose MAC it names,
// without looking at "network: {config: disabled}", and writes its
// persistent files (netplan, NetworkManager, ENI). Beside seedkeeper it
// reads seedkeeper's seed, which holds no network-config while seedkeeper
// owns the network: the hook never finds the NIC in it (it tries for
// about 49 s and logs an error) and applies nothing, and seedkeeper-watch
// configures the NIC. So it does not fight seedkeeper; it is said, since
// its error is in cloud-init's log on every NIC added.
func checkCloudInitHotplug(in *inspection) Item {
	it := Item{Verdict: OK}
	var on []string
	for _, f := range cloudInitHotplugFiles {
		if in.exists(f) {
			on = append(on, f)
			it.Paths = append(it.Paths, f)
		}
	}
	if v, ok := in.cc.merged("updates", "network", "when").([]any); ok && slices.Contains(v, any("hotplug")) {
		s := in.cc.lookup("updates", "network", "when")
		on = append(on, "updates.network.when: [hotplug] in "+s.File)
		it.Paths = append(it.Paths, s.File)
	}
	if userDataHotplug(in) {
		on = append(on, "updates.network.when: [hotplug] in the user-data of "+paths.SeedDir)
	}
	if len(on) == 0 {
		it.Found = "cloud-init's hotplug is off"
		it.Clone = "only seedkeeper-watch configures NICs added while the system runs"
		return it
	}
	it.Found = "cloud-init's hotplug is on (" + strings.Join(on, "; ") + ")"
	if in.cfg.Network.Owner == "cloud-init" {
		it.Clone = "cloud-init owns the network (network.owner: cloud-init): its hotplug applies the seed's network-config to the NICs added, as it would without seedkeeper"
		return it
	}
	it.Verdict = Note
	it.Clone = "on every NIC added, cloud-init's hotplug hook re-reads seedkeeper's seed, which holds no network-config while seedkeeper owns the network: it never finds the NIC there (it retries for about 49 s and logs an error) and writes no network file; seedkeeper-watch configures the NICs seedkeeper owns"
	return it
}

// userDataHotplug reports whether the user-data in seedkeeper's seed is
// cloud-config that asks for hotplug network updates. The user-data may
// hold secrets: only that one setting is looked at, and nothing of it is
// reported.
func userDataHotplug(in *inspection) bool {
	b, err := in.readSmall(paths.SeedDir + "/user-data")
	if err != nil || !bytes.HasPrefix(b, []byte("#cloud-config")) {
		return false
	}
	var doc struct {
		Updates struct {
			Network struct {
				When []any `yaml:"when"`
			} `yaml:"network"`
		} `yaml:"updates"`
	}
	if err := yamlx.Unmarshal(b, &doc); err != nil {
		return false
	}
	return slices.ContainsFunc(doc.Updates.Network.When, func(v any) bool { return fmt.Sprint(v) == "hotplug" })
}

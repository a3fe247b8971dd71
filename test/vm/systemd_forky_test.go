package vm

import (
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// Debian's next release, forky (cloud-init 26.2, systemd 262,
// NetworkManager 1.58, netplan.io 1.2 with systemd-resolved), as people
// will build their images next: the chains of Debian 13 on its networkd
// and netplan images, and the NetworkManager image's boot:
//
//	netplan:         first (+ hot-added NIC) → resolver-changed ∥ clone → unchanged
//	networkd:        [no-source → first (+ hot-added NIC) → resolver-changed ∥ clone → unchanged]
//	networkmanager:  [first (+ hot-added NIC, a catch-all profile beside)]
//
// Four boots in make test; the bracketed ones run in make e2e
// (SEEDKEEPER_VM_MATRIX=full): the netplan image renders through
// networkd, so make test's chain runs the identity and network checks
// over networkd on this release, and the no-source boot on networkd
// shows what Debian 13's already shows on cloud-init 25's units. The
// VMware guest on cloud-init 26.2 is TestIntegrationSystemdVMwareForky.

// TestIntegrationSystemdForky runs resolver change, clone, unchanged
// boot, hotplug and no source on forky's images, and the NetworkManager
// image's boot.
func TestIntegrationSystemdForky(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	t.Run("netplan", func(t *testing.T) {
		t.Parallel()
		releaseScenarios(t, relForky, "netplan")
	})
	t.Run("networkd", func(t *testing.T) {
		if !fullMatrix() {
			t.Skip("the networkd chain (no-source, first with a hot-added NIC, resolver-changed, clone, unchanged) runs in make e2e (SEEDKEEPER_VM_MATRIX=full); make test runs it over netplan's networkd")
		}
		t.Parallel()
		releaseScenarios(t, relForky, "networkd")
	})
	t.Run("networkmanager", func(t *testing.T) {
		if !fullMatrix() {
			t.Skip("the NetworkManager boot runs in make e2e (SEEDKEEPER_VM_MATRIX=full); make test boots NetworkManager on Debian 12 and 13")
		}
		t.Parallel()
		stackScenario(t, relForky, "networkmanager")
	})
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// TestStackMaskedNetworkManagerSameAnswer: on a root where
// NetworkManager.service is masked but its .wants link is left, and
// systemd-networkd is enabled, boot used to render NetworkManager
// keyfiles while image check said networkd. Boot, status and image check
// now give one answer, and the same one again once the mask is lifted.
func TestStackMaskedNetworkManagerSameAnswer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		masked        bool
		stack         *netcfg.Stack
		found, render string
	}{
		{"masked", true, netcfg.Networkd, "NetworkManager.service is masked", "renders them for systemd-networkd"},
		{"unmasked", false, netcfg.NetworkManager, "NetworkManager and systemd-networkd enabled", "renders owned NICs for NetworkManager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := scratchRoot(t, kvmProduct, kvmVendor, kvmUUID)
			shipDropIn(t, root)
			copyDir(t, fixtureSeed, filepath.Join(root, "var/lib/cloud/seed/nocloud"))
			for _, u := range []string{"NetworkManager.service", "systemd-networkd.service"} {
				writeFile(t, filepath.Join(root, "lib/systemd/system", u), "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n", 0o644)
				wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants", u)
				os.MkdirAll(filepath.Dir(wants), 0o755)
				if err := os.Symlink("/lib/systemd/system/"+u, wants); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, filepath.Join(root, "usr/sbin/NetworkManager"), "", 0o755)
			if tc.masked {
				if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/NetworkManager.service")); err != nil {
					t.Fatal(err)
				}
			}

			bootOK(t, root)
			var rec struct {
				Network struct {
					Stack string   `json:"stack"`
					Notes []string `json:"notes"`
				} `json:"network"`
			}
			if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, statusPath))), &rec); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(rec.Network.Stack, tc.stack.Name+" (") {
				t.Errorf("boot rendered for %q, want %s", rec.Network.Stack, tc.stack.Name)
			}
			if notes := strings.Join(rec.Network.Notes, "; "); tc.masked != strings.Contains(notes, "NetworkManager.service is masked") {
				t.Errorf("the status notes %q: masked %v", notes, tc.masked)
			}
			if r := runBinary(t, nil, "status", "--root", root); r.code != exitOK || !strings.Contains(r.stdout, "Stack:       "+tc.stack.Name+" (") {
				t.Errorf("status does not say %s: %v", tc.stack.Name, r)
			}
			r := runBinary(t, nil, "image", "check", "--root", root, "--json")
			var rep struct {
				Items []struct{ ID, Found, Clone string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("image check --json: %v\n%v", err, r)
			}
			var found, clone string
			for _, it := range rep.Items {
				if it.ID == "network-stack" {
					found, clone = it.Found, it.Clone
				}
			}
			if !strings.Contains(found, tc.found) || !strings.Contains(clone, tc.render) {
				t.Errorf("image check says %q / %q, want %q / %q", found, clone, tc.found, tc.render)
			}
		})
	}
}

// TestStackListsFollowTheTable: every list of stacks a person reads (the
// help of image check, the README's table of stacks and the order it
// gives) names each stack of netcfg.Stacks, in the table's order.
func TestStackListsFollowTheTable(t *testing.T) {
	readme := readFile(t, "../../README.md")
	_, section, _ := strings.Cut(readme, "### Network stacks\n")
	section, _, _ = strings.Cut(section, "\n### ")
	var help string
	for _, l := range strings.Split(imageUsage, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "network-stack ") {
			help = l
		}
	}
	var titles []string
	for _, s := range netcfg.Stacks {
		titles = append(titles, s.Title)
		if !strings.Contains(help, s.Title) {
			t.Errorf("image --help (%q) does not name %s", help, s.Title)
		}
		if !strings.Contains(section, "\n| "+s.Title) || !strings.Contains(section, "`"+s.Unit+"`") {
			t.Errorf("README's table of network stacks has no row for %s (%s)", s.Title, s.Unit)
		}
		places, err := stacks.Of(s.Name).Places(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range places {
			if strings.HasPrefix(p.Dir, "/run/") && !strings.Contains(section, p.Dir) {
				t.Errorf("README's table of network stacks does not say %s writes in %s", s.Title, p.Dir)
			}
		}
	}
	if want := "When several are enabled " + titles[0] + " wins, then " + strings.Join(titles[1:], ", then ") + "."; !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
		t.Errorf("README does not say %q", want)
	}
}

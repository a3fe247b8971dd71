package nosource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func put(t *testing.T, root sysroot.Root, p, content string) {
	t.Helper()
	f := root.Path(p)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func present(root sysroot.Root, p string) bool {
	_, err := os.Lstat(root.Path(p))
	return err == nil
}

// A boot after cloud-init's generator enabled it (the drop-in's single
// datasource makes ds-identify enable it on every boot).
func generatorEnabled(t *testing.T) sysroot.Root {
	root := sysroot.Root(t.TempDir())
	put(t, root, cloudInitEnabled, "")
	put(t, root, "/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0\n")
	return root
}

func TestHoldCloudInitWithoutSourceOrSeed(t *testing.T) {
	root := generatorEnabled(t)
	h, err := HoldCloudInit(root, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Held || !strings.Contains(h.Reason, "no metadata source and no seed") {
		t.Errorf("hold = %+v", h)
	}
	if !present(root, MarkerPath) || present(root, cloudInitEnabled) || !present(root, cloudInitDisabled) {
		t.Errorf("marker %v, enabled %v, disabled %v; want marker, disabled, no enabled",
			present(root, MarkerPath), present(root, cloudInitEnabled), present(root, cloudInitDisabled))
	}
	if m, err := readMarker(root); err != nil || m == nil || m.Reason != h.Reason || !m.At.Equal(t0) || !m.Switched {
		t.Errorf("marker = %+v, %v", m, err)
	}
	// A second run in the same boot changes nothing and still releases
	// what the first switched.
	if _, err := HoldCloudInit(root, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := Release(root); err != nil {
		t.Fatal(err)
	}
	if present(root, MarkerPath) || !present(root, cloudInitEnabled) || present(root, cloudInitDisabled) {
		t.Errorf("after Release: marker %v, enabled %v, disabled %v; want enabled only",
			present(root, MarkerPath), present(root, cloudInitEnabled), present(root, cloudInitDisabled))
	}
}

// Without cloud-init's generator (cloud-init not installed, or --root
// scratch trees) only the marker is written.
func TestHoldCloudInitWithoutGenerator(t *testing.T) {
	root := sysroot.Root(t.TempDir())
	h, err := HoldCloudInit(root, t0)
	if err != nil || !h.Held {
		t.Fatalf("hold = %+v, %v", h, err)
	}
	if present(root, cloudInitDisabled) || present(root, cloudInitEnabled) {
		t.Error("cloud-init's status files were made up")
	}
	if err := Release(root); err != nil || present(root, MarkerPath) || present(root, cloudInitEnabled) {
		t.Errorf("Release: %v", err)
	}
}

// A seed an earlier boot wrote (a Proxmox CD-ROM detached after the first
// boot): cloud-init runs with it, as before, and not as DataSourceNone.
func TestHoldCloudInitSeedFromEarlierBoot(t *testing.T) {
	for _, dir := range seedDirs {
		root := generatorEnabled(t)
		put(t, root, MarkerPath, `{"reason":"x","switched_cloud_init_status":false}`)
		put(t, root, dir+"/meta-data", "instance-id: iid-1\n")
		put(t, root, dir+"/user-data", "")
		h, err := HoldCloudInit(root, t0)
		if err != nil || h.Held || !strings.Contains(h.Reason, dir) {
			t.Errorf("%s: hold = %+v, %v", dir, h, err)
		}
		if present(root, MarkerPath) || !present(root, cloudInitEnabled) {
			t.Errorf("%s: marker left, or cloud-init not enabled", dir)
		}
	}
	// meta-data alone is no seed for NoCloud.
	root := generatorEnabled(t)
	put(t, root, seedDirs[0]+"/meta-data", "instance-id: iid-1\n")
	if h, _ := HoldCloudInit(root, t0); !h.Held {
		t.Errorf("meta-data without user-data counted as a seed: %+v", h)
	}
}

func TestHoldCloudInitFollowsDSIdentifyPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, cmdline string
		held               bool
	}{
		{"default", "", "", true},
		{"cfg notfound=enabled", "policy: search,found=all,maybe=all,notfound=enabled\n", "", false},
		{"cfg quoted, commented", "# comment\npolicy: \"enabled\" # always\n", "", false},
		{"cfg report", "policy: report\n", "", false},
		{"cfg notfound=disabled", "policy: search,found=all,maybe=none,notfound=disabled\n", "", true},
		{"cmdline overrides cfg", "policy: enabled\n", "ci.di.policy=search,notfound=disabled", true},
		{"cmdline notfound=enabled", "", "ci.di.policy=notfound=enabled", false},
		{"another key", "datasource: NoCloud\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := generatorEnabled(t)
			if tc.cfg != "" {
				put(t, root, dsIdentifyConfig, tc.cfg)
			}
			put(t, root, "/proc/cmdline", "root=/dev/vda1 "+tc.cmdline+"\n")
			h, err := HoldCloudInit(root, t0)
			if err != nil || h.Held != tc.held || present(root, MarkerPath) != tc.held {
				t.Errorf("hold = %+v, %v, marker %v; want held %v", h, err, present(root, MarkerPath), tc.held)
			}
			if !tc.held && !strings.Contains(h.Reason, "ds-identify's policy") {
				t.Errorf("reason: %s", h.Reason)
			}
		})
	}
}

// A marker seedkeeper did not write is left alone (the units test only
// that it exists, so it still holds cloud-init back); Release says what is
// wrong, without quoting it.
func TestForeignMarker(t *testing.T) {
	root := generatorEnabled(t)
	put(t, root, MarkerPath, "garbage")
	err := Release(root)
	if !present(root, MarkerPath) {
		t.Error("a marker seedkeeper did not write was removed")
	}
	if err == nil || !strings.Contains(err.Error(), "not a marker seedkeeper wrote") || strings.Contains(err.Error(), "garbage") {
		t.Errorf("Release = %v", err)
	}
}

// An image's ds-identify.cfg that is an absolute link is the image's
// file, never the host's: a host file saying "policy: enabled" does not
// make cloud-init run without a datasource in the image.
func TestDSIdentifyPolicyStaysInRoot(t *testing.T) {
	host := filepath.Join(t.TempDir(), "ds-identify.cfg")
	if err := os.WriteFile(host, []byte("policy: enabled\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := sysroot.Root(t.TempDir())
	put(t, root, "/proc/cmdline", "ro quiet")
	if err := os.MkdirAll(root.Path("/etc/cloud"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, root.Path(dsIdentifyConfig)); err != nil {
		t.Fatal(err)
	}
	if p, ok := policyRunsWithoutSource(root); ok {
		t.Errorf("read the host's %s through a link: policy %q", host, p)
	}
}

// FuzzDSIdentifyPolicy reads arbitrary ds-identify.cfg and command lines:
// it never fails, and only the tokens that run cloud-init without a
// datasource count.
func FuzzDSIdentifyPolicy(f *testing.F) {
	f.Add("policy: search,found=all,maybe=none,notfound=disabled\n", "ro quiet")
	f.Add("policy: 'enabled'\n", "ci.di.policy=report")
	f.Add("datasource: None\npolicy\n:", "ci.di.policy=")
	f.Fuzz(func(t *testing.T, cfg, cmdline string) {
		root := sysroot.Root(t.TempDir())
		put(t, root, dsIdentifyConfig, cfg)
		put(t, root, "/proc/cmdline", cmdline)
		p, ok := policyRunsWithoutSource(root)
		if ok && !strings.Contains(p, "enabled") && !strings.Contains(p, "report") {
			t.Errorf("policy %q runs cloud-init without a datasource", p)
		}
	})
}

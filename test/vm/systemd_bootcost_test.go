package vm

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// What seedkeeper costs a boot: the same image with and without the
// package, and with the package's unit changed, booted in alternation in
// one run so that every variant sees the same host load.

// Knobs of TestIntegrationSystemdBootCost.
const (
	envBench         = "SEEDKEEPER_VM_BENCH"          // set to run it
	envBenchPairs    = "SEEDKEEPER_VM_BENCH_PAIRS"    // rounds of every variant (default 3)
	envBenchReleases = "SEEDKEEPER_VM_BENCH_RELEASES" // comma-separated (default bookworm,trixie)
	envBenchVariants = "SEEDKEEPER_VM_BENCH_VARIANTS" // comma-separated (default all of bootCostVariants)
	envBenchBoots    = "SEEDKEEPER_VM_BENCH_BOOTS"    // boots per disk: 1 (first only) or 2 (default)
)

// bootCostVariant is one way of booting the networkd image.
type bootCostVariant struct {
	name       string
	seedkeeper bool
	append     []string // kernel arguments: unit changes through sk-dropins
	// check asserts that the unit change took effect in the boot.
	check func(t *testing.T, r *sdReport)
}

var bootCostVariants = []bootCostVariant{
	{name: "plain", seedkeeper: false, check: func(t *testing.T, r *sdReport) {
		if u := r.unit(t, "seedkeeper-boot"); u["LoadState"] != "not-found" {
			t.Errorf("%s: the plain image has seedkeeper-boot.service: %v", r.name, u)
		}
	}},
	{name: "shipped", seedkeeper: true, check: func(t *testing.T, r *sdReport) {
		u := r.unit(t, "seedkeeper-boot")
		if !slices.Contains(strings.Fields(u["After"]), "systemd-udev-trigger.service") || u["CPUWeight"] != "10000" {
			t.Errorf("%s: seedkeeper-boot.service is not as shipped (After=%s CPUWeight=%s)", r.name, u["After"], u["CPUWeight"])
		}
	}},
	{name: "no-udev-trigger", seedkeeper: true,
		append: []string{"sk.unitdel=seedkeeper-boot.service:After=systemd-udev-trigger.service"},
		check: func(t *testing.T, r *sdReport) {
			u := r.unit(t, "seedkeeper-boot")
			if slices.Contains(strings.Fields(u["After"]), "systemd-udev-trigger.service") || !strings.HasPrefix(u["FragmentPath"], "/run/systemd/generator/") {
				t.Errorf("%s: seedkeeper-boot.service is still after systemd-udev-trigger.service (fragment %s)", r.name, u["FragmentPath"])
			}
		}},
	// Without both udev orderings: what is left between local-fs.target
	// and seedkeeper-boot is the binary's own bounded wait for late
	// devices.
	{name: "no-udev-ordering", seedkeeper: true,
		append: []string{"sk.unitdel=seedkeeper-boot.service:After=systemd-udev-trigger.service",
			"sk.unitdel=seedkeeper-boot.service:After=systemd-udevd.service"},
		check: func(t *testing.T, r *sdReport) {
			u := r.unit(t, "seedkeeper-boot")
			if after := strings.Fields(u["After"]); slices.Contains(after, "systemd-udev-trigger.service") || slices.Contains(after, "systemd-udevd.service") {
				t.Errorf("%s: seedkeeper-boot.service is still ordered after udev (After=%s)", r.name, u["After"])
			}
		}},
	{name: "cpuweight-default", seedkeeper: true,
		append: []string{"sk.dropin=seedkeeper-boot.service:CPUWeight=100"},
		check: func(t *testing.T, r *sdReport) {
			if u := r.unit(t, "seedkeeper-boot"); u["CPUWeight"] != "100" {
				t.Errorf("%s: seedkeeper-boot.service has CPUWeight=%s, want the default 100", r.name, u["CPUWeight"])
			}
		}},
}

// bootCostSample is what one boot measured, in seconds since the kernel
// started (monotonic clock).
type bootCostSample struct {
	final, ssh, local, skWall, skCPU float64
	// netOK: the NICs have the names and addresses the seed gives them
	// (eth0 static, eth1 its lease), which a unit change that lets the
	// boot race udev would break.
	netOK bool
}

// TestIntegrationSystemdBootCost boots the networkd image of each release
// N times in each variant (plain: without the package; shipped; the unit
// without its ordering after systemd-udev-trigger.service; without both
// udev orderings; the unit with the default CPU weight), each on a fresh disk and then again on that
// disk (first and second boot), the variants of a round side by side
// and their order rotated from round to round. It logs, per release,
// boot and variant, the median and range of the time to cloud-final
// (ActiveEnterTimestampMonotonic), to sshd listening (ssh.service active:
// Debian's sshd is Type=notify, so active means listening) and to
// cloud-init-local's start, and the median's difference from plain. A
// measurement, not a test (only the variants taking effect is checked):
// it runs only when SEEDKEEPER_VM_BENCH is set; BENCHMARKS.md has its
// figures. SEEDKEEPER_VM_BENCH_PAIRS, _RELEASES, _VARIANTS and _BOOTS
// choose how many rounds, which releases and variants, and whether the
// second boot of each disk is measured too.
func TestIntegrationSystemdBootCost(t *testing.T) {
	testenv.Integration(t)
	if os.Getenv(envBench) == "" {
		t.Skip("a measurement, not a test: set SEEDKEEPER_VM_BENCH=1 to run it (SEEDKEEPER_VM_BENCH_PAIRS, SEEDKEEPER_VM_BENCH_RELEASES)")
	}
	pairs := 3
	if s := os.Getenv(envBenchPairs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s must be a count of at least 1", envBenchPairs)
		}
		pairs = n
	}
	releases := []string{relBookworm, relTrixie}
	if s := os.Getenv(envBenchReleases); s != "" {
		releases = strings.Split(s, ",")
	}
	variants := bootCostVariants
	if s := os.Getenv(envBenchVariants); s != "" {
		variants = nil
		for _, name := range strings.Split(s, ",") {
			i := slices.IndexFunc(bootCostVariants, func(v bootCostVariant) bool { return v.name == name })
			if i < 0 {
				t.Fatalf("%s: no variant %q", envBenchVariants, name)
			}
			variants = append(variants, bootCostVariants[i])
		}
	}
	boots := []string{"first", "second"}
	if s := os.Getenv(envBenchBoots); s == "1" {
		boots = boots[:1]
	} else if s != "" && s != "2" {
		t.Fatalf("%s must be 1 or 2", envBenchBoots)
	}
	imgs := map[string]*sdImage{}
	for _, rel := range releases {
		for _, v := range variants {
			if k := fmt.Sprintf("%s/%v", rel, v.seedkeeper); imgs[k] == nil {
				imgs[k] = needSystemdImage(t, rel, "networkd", v.seedkeeper)
			}
		}
	}
	load0, _ := os.ReadFile("/proc/loadavg")
	start := time.Now()

	var mu sync.Mutex
	samples := map[string][]bootCostSample{} // release/boot/variant
	for i := range pairs {
		t.Run(fmt.Sprintf("round%d", i+1), func(t *testing.T) {
			for j := range variants {
				v := variants[(i+j)%len(variants)]
				for _, rel := range releases {
					t.Run(rel+"/"+v.name, func(t *testing.T) {
						t.Parallel()
						d := newSDDisk(t, imgs[fmt.Sprintf("%s/%v", rel, v.seedkeeper)])
						for _, boot := range boots {
							r := d.boot(t, sdBoot{Name: boot, UUID: uuidVM, Seed: proxmoxSeed(resolverA), NICs: []sdNIC{nicStatic, nicDHCP}, Append: v.append})
							if k := r.get(t, "kind"); k != "normal" {
								t.Fatalf("%s: reported by the hang timer (%s)", boot, k)
							}
							v.check(t, r)
							s := bootCostSample{
								final: r.mono(t, "cloud-final", "ActiveEnterTimestampMonotonic").Seconds(),
								ssh:   r.mono(t, "ssh", "ActiveEnterTimestampMonotonic").Seconds(),
								local: r.mono(t, "cloud-init-local", "InactiveExitTimestampMonotonic").Seconds(),
								netOK: slices.Contains(r.addrsOf(t, "eth0"), addrStatic) && slices.Contains(r.addrsOf(t, "eth1"), addrDHCP),
							}
							if v.seedkeeper {
								s.skWall = (r.mono(t, "seedkeeper-boot", "ActiveEnterTimestampMonotonic") - r.mono(t, "seedkeeper-boot", "InactiveExitTimestampMonotonic")).Seconds()
								cpu, _ := strconv.ParseFloat(r.unit(t, "seedkeeper-boot")["CPUUsageNSec"], 64)
								s.skCPU = cpu / 1e9
							}
							t.Logf("BOOTCOST %s %s %s: cloud-final %.1fs ssh %.1fs cloud-init-local start %.1fs seedkeeper-boot wall %.1fs cpu %.1fs network as the seed says %v | sshd listening (journal) %s",
								rel, boot, v.name, s.final, s.ssh, s.local, s.skWall, s.skCPU, s.netOK, strings.TrimSpace(string(r.files["sshd-listening"])))
							if !s.netOK {
								t.Logf("%s %s %s: addresses:\n%s\nseedkeeper journal:\n%s", rel, boot, v.name, r.get(t, "addr.json"), r.get(t, "journal-seedkeeper"))
							}
							mu.Lock()
							k := rel + "/" + boot + "/" + v.name
							samples[k] = append(samples[k], s)
							mu.Unlock()
						}
					})
				}
			}
		})
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	t.Logf("boot cost: %d rounds of %d variants on %v in %v; host load average %s at the start, %s at the end",
		pairs, len(variants), releases, time.Since(start).Round(time.Second),
		strings.Join(strings.Fields(string(load0))[:3], " "), strings.Join(strings.Fields(string(load1))[:3], " "))
	t.Logf("boot cost summary (seconds since the kernel started; median [min–max], Δ = median against plain):\n%s", bootCostTable(releases, samples))
}

// bootCostTable renders the samples as a Markdown table.
func bootCostTable(releases []string, samples map[string][]bootCostSample) string {
	var b strings.Builder
	b.WriteString("| release | boot | variant | n | cloud-final | Δ | sshd listening | Δ | cloud-init-local starts | seedkeeper-boot wall | its CPU | network as the seed says |\n")
	b.WriteString("|---|---|---|--:|---|--:|---|--:|---|---|---|--:|\n")
	for _, rel := range releases {
		for _, boot := range []string{"first", "second"} {
			plain := samples[rel+"/"+boot+"/plain"]
			for _, v := range bootCostVariants {
				ss := samples[rel+"/"+boot+"/"+v.name]
				if len(ss) == 0 {
					continue
				}
				col := func(f func(bootCostSample) float64) []float64 {
					var xs []float64
					for _, s := range ss {
						xs = append(xs, f(s))
					}
					return xs
				}
				delta := func(f func(bootCostSample) float64) string {
					if len(plain) == 0 || v.name == "plain" {
						return "–"
					}
					var px []float64
					for _, s := range plain {
						px = append(px, f(s))
					}
					m, p := median(col(f)), median(px)
					return fmt.Sprintf("%+.1f s (%+.0f %%)", m-p, 100*(m-p)/p)
				}
				final := func(s bootCostSample) float64 { return s.final }
				ssh := func(s bootCostSample) float64 { return s.ssh }
				ok := 0
				for _, s := range ss {
					if s.netOK {
						ok++
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d/%d |\n", rel, boot, v.name, len(ss),
					spread(col(final)), delta(final), spread(col(ssh)), delta(ssh),
					spread(col(func(s bootCostSample) float64 { return s.local })),
					spread(col(func(s bootCostSample) float64 { return s.skWall })),
					spread(col(func(s bootCostSample) float64 { return s.skCPU })), ok, len(ss))
			}
		}
	}
	return b.String()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is "median [min–max]", or the one value.
func spread(xs []float64) string {
	if len(xs) == 1 {
		return fmt.Sprintf("%.1f", xs[0])
	}
	return fmt.Sprintf("%.1f [%.1f–%.1f]", median(xs), slices.Min(xs), slices.Max(xs))
}

// Command skbench is seedkeeper's benchmark harness and fault-matrix
// runner. It compares whole processes side by side in one run, against one
// simulated SmartOS host (mdata/mdatatest) on a pty: our mdata-get and
// seedkeeper against Debian's cloud-init 22.4.2 (driven by
// bench/py/cloudinit_peer.py under /usr/bin/python3), our seed reader
// against isoinfo, mtools and cloud-init's NoCloud, plus footprint figures
// and the Go benchmarks of mdata, hotplug and netcfg/apply. It writes its
// figures into BENCHMARKS.md.
//
//	skbench bench  [flags]   benchmarks → the "benchmarks" section
//	skbench faults [flags]   the full fault matrix → the "faults" section
//	skbench hostile [flags]  peak RSS over testdata/hostile → the "hostile" section
//
// Run it from the module root after `make build` (the Makefile's bench
// and faults targets do).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seedkeeper/seedkeeper/bench"
)

const usage = `Usage: skbench bench  [--bin FILE] [--out FILE] [--runs N] [--watch D] [--gobench FILE] [--quick]
       skbench faults [--bin FILE] [--out FILE] [--runs N] [--seed N]
       skbench hostile [--bin FILE] [--out FILE] [--case TEXT]

bench compares whole processes against the peers installed here and writes
the "benchmarks" section of --out; faults runs the full fault matrix and
writes the "faults" section; hostile runs fetch, boot and status once over
every case of testdata/hostile, and those with image check and image seal
over inputs at every documented limit and one past it, writes their peak
RSS and time into the "hostile" section, and exits 1 when one reaches the
64 MiB budget. Run from the module root as root (network namespaces for
the watch footprint; the Go integration benchmarks).

Flags:
  --bin FILE      the seedkeeper binary (default bin/seedkeeper, from make build)
  --out FILE      the results page (default BENCHMARKS.md)
  --runs N        runs per measurement (bench default 20) or per fault case (faults default 20)
  --watch D       how long to churn veths under seedkeeper watch (default 60s)
  --gobench FILE  go test -bench output to include (default: run the mdata, hotplug and netcfg/apply ones)
  --quick         fewer runs and a 10 s watch, for trying the harness
  --seed N        seed of the seed-image and parser mutations (default 1)
  --case TEXT     hostile: run only the cases whose name holds TEXT, and
                  print their section instead of writing --out
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The helpers of "hostile" (limits.go), not for people.
	if (len(args) == 2 || len(args) == 3 && args[0] == "limits-gen") && (args[0] == "limits-gen" || args[0] == "mdata-host") {
		f := func(dir string) error { return limitsGen(dir, strings.Join(args[2:], "")) }
		if args[0] == "mdata-host" {
			f = mdataHost
		}
		if err := f(args[1]); err != nil {
			fmt.Fprintf(stderr, "skbench %s: %v\n", args[0], err)
			return 2
		}
		return 0
	}
	if len(args) == 0 || (args[0] != "bench" && args[0] != "faults" && args[0] != "hostile") {
		fmt.Fprint(stderr, usage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 3
	}
	fs := flag.NewFlagSet("skbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	bin := fs.String("bin", "bin/seedkeeper", "")
	out := fs.String("out", "BENCHMARKS.md", "")
	runs := fs.Int("runs", 0, "")
	watch := fs.Duration("watch", 60*time.Second, "")
	gobench := fs.String("gobench", "", "")
	quick := fs.Bool("quick", false, "")
	seed := fs.Uint64("seed", 1, "")
	only := fs.String("case", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return 3
	}
	abs, err := filepath.Abs(*bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skbench: the seedkeeper binary: %v (run make build)\n", err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	var name, body string
	var over []string
	switch args[0] {
	case "bench":
		n := *runs
		if n <= 0 {
			n = 20
			if *quick {
				n = 5
			}
		}
		if *quick {
			*watch = 10 * time.Second
		}
		h := &harness{bin: abs, runs: n, watchFor: *watch, gobench: *gobench, quick: *quick, logf: logf}
		body, err = h.run(ctx)
		name = "benchmarks"
	case "faults":
		n := *runs
		if n <= 0 {
			n = 20
		}
		body, err = faults(ctx, abs, n, *seed, logf)
		name = "faults"
	case "hostile":
		var cases []*hostileCase
		body, cases, err = hostile(ctx, abs, *only, logf)
		over = overBudget(cases)
		name = "hostile"
		if err == nil && *only != "" {
			if len(cases) == 0 {
				fmt.Fprintf(stderr, "skbench: no hostile case's name holds %q\n", *only)
				return 3
			}
			// Some cases only: the page keeps the whole run's figures.
			fmt.Fprint(stdout, body)
			if len(over) > 0 {
				fmt.Fprintf(stderr, "skbench: over the 64 MiB budget, not measured, crashed or exited outside 0-4: %s\n", strings.Join(over, ", "))
				return 1
			}
			return 0
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "skbench: %v\n", err)
		return 2
	}
	if err := bench.UpdateSection(*out, name, body); err != nil {
		fmt.Fprintf(stderr, "skbench: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "skbench: wrote the %s section of %s\n", name, *out)
	if len(over) > 0 {
		fmt.Fprintf(stderr, "skbench: over the 64 MiB budget, not measured, crashed or exited outside 0-4: %s\n", strings.Join(over, ", "))
		return 1
	}
	return 0
}

// faults runs the full fault matrix and renders its section.
func faults(ctx context.Context, bin string, runs int, seed uint64, logf func(string, ...any)) (string, error) {
	start := time.Now()
	md, err := bench.RunMdataMatrix(ctx, bench.MdataOptions{Runs: runs, Binary: bin, Full: true, Parallel: 2, Logf: logf})
	if err != nil {
		return "", err
	}
	fixtures := append([]string{}, bench.DefaultSeedFixtures...)
	fixtures = append(fixtures, "fat32.img")
	sd, err := bench.RunSeedMatrix(ctx, bench.SeedOptions{Dir: "testdata/nocloud", Fixtures: fixtures, Runs: runs, Seed: seed, Logf: logf})
	if err != nil {
		return "", err
	}
	nt, err := bench.RunNetMatrix(ctx, bench.NetOptions{Root: ".", Mutations: runs * 5, Seed: seed, Logf: logf})
	if err != nil {
		return "", err
	}
	rows := append(append(md, sd...), nt...)
	var bad []string
	for _, r := range rows {
		if r.Bad() {
			bad = append(bad, r.String())
		}
	}
	var b strings.Builder
	b.WriteString("## Fault matrix\n\n")
	b.WriteString(bench.ThisMachine(".").Markdown())
	fmt.Fprintf(&b, "- Command: `make faults` (`skbench faults --runs %d --seed %d`), %s\n\n", runs, seed, time.Since(start).Round(time.Second))
	b.WriteString(faultLegend)
	b.WriteString(bench.MatrixMarkdown(rows))
	if len(bad) > 0 {
		fmt.Fprintf(&b, "\n**%d rows with wrong values, hangs or panics.**\n", len(bad))
	} else {
		b.WriteString("\nNo run returned a wrong value, hung or panicked.\n")
	}
	return b.String(), nil
}

const faultLegend = `Each mdata case runs against a fresh simulated host (mdata/mdatatest) over a
pty (or a unix socket where it says so), with the client library in process
and with the built binary invoked as mdata-get, one process per run. A run
has a deadline (20 s, or 1.5 s for a fault that never clears, where a timeout
is the right answer); a run that has not returned 3 s after it counts as a
hang. Two cases run at a time. Cases that wait out the client's 5 s read timeout run a quarter as often.

- **correct**: mdata: the exact bytes of the value (mdata-get: plus the
  newline rule of the C tool); seed: the pristine files; netcfg: accepted, and
  its v1 form parses again.
- **correct error**: NOTFOUND for a missing key, a timeout for a fault that
  never clears, a clean error from a reader or parser.
- **other**: mdata: an error where an answer was due; seed: a read that
  succeeded with other bytes after a mutation before the end of the files'
  data (ISO9660 and FAT have no checksums, so any reader returns them).
- **wrong**: mdata: another value, NOTFOUND for a key that exists, or frames
  of concurrent clients interleaved on the line; seed: files changed by a
  mutation past the end of their data; netcfg: accepted but not writable
  back. Must be 0, as must **hangs** and **panics**.

`

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

// TestMain runs the harness's helper commands (limits-gen, mdata-host),
// which the harness starts as its own executable: here the test binary.
func TestMain(m *testing.M) {
	if (len(os.Args) == 3 || len(os.Args) == 4 && os.Args[1] == "limits-gen") && (os.Args[1] == "limits-gen" || os.Args[1] == "mdata-host") {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestIntegrationHostileBudget is make bench-hostile in make test: it
// builds seedkeeper and runs fetch, boot, status, image check and image
// seal over inputs at every documented limit and one past it (limits.go;
// the committed corpus is cmd/seedkeeper's TestHostile*Corpus), each a
// process whose peak RSS is measured
// (wait4's ru_maxrss), and fails when one reaches SECURITY.md's 64 MiB,
// crashes or exits outside 0–4. The figures go to the test log;
// make bench-hostile writes them into BENCHMARKS.md.
func TestIntegrationHostileBudget(t *testing.T) {
	testenv.Integration(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root, as the corpus tests do: run `sudo make test`")
	}
	t.Chdir("../../..")
	bin := filepath.Join(t.TempDir(), "seedkeeper")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/seedkeeper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cases, err := limitCases(ctx, bin, t.TempDir(), "", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + hostileMarkdown(cases, time.Since(start)))
	if over := overBudget(cases); len(over) > 0 {
		t.Errorf("over the 64 MiB budget, not measured, crashed or exited outside 0-4: %s", strings.Join(over, ", "))
	}
	var cols []string
	for _, c := range cases {
		for _, s := range c.steps {
			cols = append(cols, s.cmd)
		}
	}
	for _, want := range hostileColumns {
		if !strings.Contains(strings.Join(cols, "\n")+"\n", want+"\n") {
			t.Errorf("no case ran %s", want)
		}
	}
}

package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/buildtest"
	"github.com/seedkeeper/seedkeeper/internal/testenv"
)

func TestMain(m *testing.M) { buildtest.Main(m) }

// seedkeeperBinary builds cmd/seedkeeper once per test run.
func seedkeeperBinary(t testing.TB) string { return buildtest.Seedkeeper(t) }

// checkRows fails the test for every row with a wrong value, a hang or a
// panic, and logs the rest.
func checkRows(t *testing.T, rows []*Row) {
	t.Helper()
	for _, r := range rows {
		if r.Bad() {
			t.Errorf("%s\n%v", r, r.Notes)
		} else {
			t.Logf("%s %v", r, r.Notes)
		}
	}
}

// TestIntegrationFaultMatrix is the short form of `make faults`: every
// fault mode of the simulated host, over a real pty (and a unix socket),
// against the client library and the built mdata-get, a few runs each;
// then corrupted seed images and mutated network configurations. No run
// may return a wrong value, hang past its deadline or panic.
func TestIntegrationFaultMatrix(t *testing.T) {
	testenv.Integration(t)
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("needs /dev/ptmx for the simulated serial port")
	}
	bin := seedkeeperBinary(t)
	const runs = 2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Run("mdata", func(t *testing.T) {
		rows, err := RunMdataMatrix(ctx, MdataOptions{Runs: runs, Binary: bin, Dir: t.TempDir(), Parallel: 4})
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, rows)
	})
}

// TestIntegrationFaultMatrixSeeds reads deterministically corrupted seed
// images (testdata/nocloud) with the image reader and ReadNoCloud.
func TestIntegrationFaultMatrixSeeds(t *testing.T) {
	testenv.Integration(t)
	rows, err := RunSeedMatrix(context.Background(), SeedOptions{Dir: "../testdata/nocloud", Runs: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows)
}

// TestIntegrationFaultMatrixNet feeds the network parsers the fixtures,
// the fuzz corpus and mutants of both.
func TestIntegrationFaultMatrixNet(t *testing.T) {
	testenv.Integration(t)
	rows, err := RunNetMatrix(context.Background(), NetOptions{Root: "..", Mutations: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rows)
}

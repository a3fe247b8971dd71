package main

import (
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/config"
	"github.com/seedkeeper/seedkeeper/internal/journallog"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/nosource"
)

// seedkeeper(8)'s ENVIRONMENT and FILES are the top-level help's last
// paragraphs: each variable the program reads and each file of its own
// is there, under the name the code uses.
func TestUsageEnvironmentAndFiles(t *testing.T) {
	env, files, ok := strings.Cut(usageEnvFiles, "\nFiles:\n")
	if !ok || !strings.HasPrefix(env, "\nEnvironment:\n") {
		t.Fatalf("no Environment: and Files: paragraphs:\n%s", usageEnvFiles)
	}
	for _, v := range []string{mdata.EnvTransport, journallog.EnvStream, "VMX_GUESTINFO", "GOMEMLIMIT"} {
		if !strings.Contains(env, "\n  "+v+" ") {
			t.Errorf("Environment: lacks %s", v)
		}
	}
	for _, p := range []string{config.DefaultPath, paths.Status, paths.Identity, paths.Receipt, paths.Changes, paths.SeedDir + "/",
		paths.DropIn, agent.WatchRecordPath, agent.WatchReadyPath, nosource.MarkerPath} {
		if !strings.Contains("\n"+files, "\n  "+p+" ") {
			t.Errorf("Files: lacks %s", p)
		}
	}
}

package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/agent"
)

// Boot against a scratch root holding a NoCloud seed a person put in the
// seed directory: the flow reads it, decides the instance ID and writes
// the seed cloud-init reads. With NetworkPlan no link is touched.
func ExampleBoot() {
	root, _ := os.MkdirTemp("", "agent-example")
	defer os.RemoveAll(root)
	seedDir := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	os.MkdirAll(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: iid-example\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\n"), 0o600)

	e := agent.LoadEnv(root, "", nil) // defaults: no config file
	st, err := agent.Boot(context.Background(), e, agent.BootOptions{Network: agent.NetworkPlan})
	if err != nil {
		fmt.Println("boot:", err)
		return
	}
	fmt.Println(st.Outcome, st.Source, st.Identity.InstanceID)
	// Output: ok nocloud iid-example
}

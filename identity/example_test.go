package identity_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/identity"
)

// A Proxmox VM is started on a node with other resolvers: its SHA-1
// instance ID changes, the ID handed to cloud-init does not.
func ExampleDecide() {
	dir, err := os.MkdirTemp("", "identity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	userData := []byte("#cloud-config\nhostname: web1\n")
	boot := func(networkConfig string, day int) identity.Decision {
		d, err := identity.Decide(identity.Input{
			Root:          dir,
			Source:        datasource.SourceNoCloud,
			ReportedID:    identity.DerivedID(userData, []byte(networkConfig)),
			MachineID:     "4c4c4544-0042-3510-8052-b4c04f4e3332",
			UserData:      userData,
			NetworkConfig: []byte(networkConfig),
			Now:           time.Date(2026, 3, day, 8, 0, 0, 0, time.UTC),
		})
		if err != nil {
			log.Fatal(err)
		}
		return d
	}

	first := boot("version: 1\nconfig:\n    - type: nameserver\n      address:\n      - '192.0.2.53'\n", 1)
	fmt.Println(first.InstanceID, first.Rule)
	moved := boot("version: 1\nconfig:\n    - type: nameserver\n      address:\n      - '198.51.100.53'\n", 2)
	fmt.Println(moved.ReportedID, moved.ReportedKind)
	fmt.Println(moved.InstanceID, moved.Rule, moved.Changed)
	fmt.Println(moved.Explanation)
	// Output:
	// cc6b2929b0691f4f6fb06bec23d176836b4fe7bd first-run
	// 52f63c65a4d56fa526860eb58b7c141d250e8fbd derived
	// cc6b2929b0691f4f6fb06bec23d176836b4fe7bd keep false
	// Instance ID "cc6b2929b0691f4f6fb06bec23d176836b4fe7bd": the nocloud source reported "52f63c65a4d56fa526860eb58b7c141d250e8fbd", which is the SHA-1 of its user-data and network-config (derived from config, as Proxmox makes it), not an identity; this is the machine the pin belongs to (4c4c4544-0042-3510-8052-b4c04f4e3332), so the pin made at 2026-03-01T08:00:00Z by rule 6 (first-run) is kept (rule 1, keep).
}

// Reset makes the next boot a new instance although nothing else changed.
func ExampleReset() {
	dir, err := os.MkdirTemp("", "identity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	in := identity.Input{Root: dir, Source: datasource.SourceVMware, ReportedID: "vm-42", MachineID: "4c4c4544-0042-3510-8052-b4c04f4e3332"}

	d, _ := identity.Decide(in)
	fmt.Println(d.InstanceID, d.Rule)
	st, err := identity.Reset(dir, time.Time{})
	if err != nil {
		log.Fatal(err)
	}
	d, _ = identity.Decide(in)
	fmt.Println(d.InstanceID == "vm-42-r"+st.Reset.Suffix, d.Rule)
	d, _ = identity.Decide(in)
	fmt.Println(d.InstanceID == "vm-42-r"+st.Reset.Suffix, d.Rule)
	// Output:
	// vm-42 first-run
	// true reset
	// true keep
}

// cloud-init's DataSourceNone records a placeholder, not an instance ID: it
// is never adopted or pinned.
func ExamplePlaceholderID() {
	for _, id := range []string{"iid-datasource-none", "", "nocloud", "i-0abc"} {
		if why, ok := identity.PlaceholderID(id); ok {
			fmt.Printf("%q: placeholder, %s\n", id, why)
		} else {
			fmt.Printf("%q: an instance ID\n", id)
		}
	}
	// Output:
	// "iid-datasource-none": placeholder, cloud-init's placeholder for "no datasource" (DataSourceNone)
	// "": placeholder, an empty instance ID
	// "nocloud": an instance ID
	// "i-0abc": an instance ID
}

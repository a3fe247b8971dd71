package mdata_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// A guest reads its hostname. Here the host is the simulator; in a VM the
// transport comes from Detect.
func ExampleClient_Get() {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	c := mdata.New(h.Transport(), nil)
	defer c.Close()

	// Without a deadline a client waits for the host as long as it takes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := c.Get(ctx, "sdc:hostname")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// A key the host does not have is an answer, not a fault.
	_, err = c.Get(ctx, "no-such-key")
	fmt.Println(errors.Is(err, mdata.ErrNotFound))
	// Output:
	// web01
	// true
}

// Put writes customer metadata; the host keeps "sdc:" keys read-only.
func ExampleClient_Put() {
	h := mdatatest.NewHost(nil)
	defer h.Close()
	c := h.Client()
	defer c.Close()
	ctx := context.Background()

	if err := c.Put(ctx, "role", []byte("web")); err != nil {
		log.Fatal(err)
	}
	v, _ := h.Store().Get("role")
	fmt.Printf("stored: %s\n", v)

	err := c.Put(ctx, "sdc:hostname", []byte("other"))
	var he *mdata.HostError
	fmt.Println(errors.As(err, &he), he.Code)
	// Output:
	// stored: web
	// true FAILURE
}

// Delete removes a key; deleting one that is not there succeeds too.
func ExampleClient_Delete() {
	st := mdatatest.NewStore()
	st.SetString("role", "web")
	h := mdatatest.NewHost(st)
	defer h.Close()
	c := h.Client()
	defer c.Close()
	ctx := context.Background()

	fmt.Println(c.Delete(ctx, "role"))
	fmt.Println(c.Delete(ctx, "role"))
	_, err := c.Get(ctx, "role")
	fmt.Println(errors.Is(err, mdata.ErrNotFound))
	// Output:
	// <nil>
	// <nil>
	// true
}

// Keys lists customer metadata in the host's order, as mdata-list does;
// the read-only "sdc:" keys are not listed.
func ExampleClient_Keys() {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	c := h.Client()
	defer c.Close()

	keys, err := c.Keys(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range keys {
		fmt.Println(k)
	}
	// Output:
	// hostname
	// root_authorized_keys
	// user-script
	// cloud-init:user-data
}

// Options set the timeouts; a short Probe lets a test see a client get
// over a host that ignores its first line (the client starts a new
// session and asks again) without waiting the default half second.
func ExampleOptions() {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	h.SetFault(mdatatest.Fault{Mode: mdatatest.Silent, Count: 1})
	c := mdata.New(h.Transport(), &mdata.Options{
		Timeouts: mdata.Timeouts{Probe: 20 * time.Millisecond},
	})
	defer c.Close()

	v, err := c.Get(context.Background(), "sdc:uuid")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// Output:
	// 4a1b2c3d-0000-1111-2222-333344445555
}

// Detect looks for a zone socket and a SmartOS DMI name under a root
// (here an empty scratch tree, where it finds neither) unless a
// transport is forced.
func ExampleDetect() {
	root := "/nonexistent-root" // in a real guest: ""
	_, _, err := mdata.Detect(root, "")
	fmt.Println(errors.Is(err, mdata.ErrNoTransport))

	t, reason, err := mdata.Detect(root, "unix:/native/.zonecontrol/metadata.sock")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t, "-", reason)
	// Output:
	// true
	// unix:/native/.zonecontrol/metadata.sock - transport set explicitly
}

package datasource_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// The SmartOS source reads every key it needs in one session with the
// metadata host; here a simulated host on a unix socket, as a zone's
// /native/.zonecontrol/metadata.sock.
func ExampleRead_smartOS() {
	dir, err := os.MkdirTemp("", "smartos-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "metadata.sock")

	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	if _, err := h.ListenUnix(sock); err != nil {
		log.Fatal(err)
	}

	// The transport could also be found by detection (a zone's socket,
	// the serial port of a SmartDC HVM guest); here it is named.
	md, err := datasource.Read(context.Background(), datasource.SourceSmartOS, datasource.Options{MdataTransport: "unix:" + sock})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("instance:", md.InstanceID)
	fmt.Println("hostname:", md.Hostname)
	fmt.Println("keys:", len(md.PublicKeys))
	fmt.Println("zone:", md.SmartOS.AvailabilityZone)
	for _, ifc := range md.Network.Interfaces {
		fmt.Println("nic:", ifc.Name, ifc.MAC, ifc.Addresses)
	}
	fmt.Println("sessions:", h.Stats().Streams)
	// Output:
	// instance: 4a1b2c3d-0000-1111-2222-333344445555
	// hostname: web01
	// keys: 2
	// zone: us-east-1
	// nic: net0 90:b8:d0:4a:1b:01 [203.0.113.10/24 2001:db8:10::10/64]
	// nic: net1 90:b8:d0:4a:1b:02 [10.88.0.10/24]
	// sessions: 1
}

// Command consumer uses seedkeeper's stable packages from a module of its
// own, with values known only at run time.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: consumer ROOT HOSTNAME MAC")
	}
	root, hostname, mac := os.Args[1], os.Args[2], os.Args[3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// mdata.Detect with a root computed at run time: an empty tree has no
	// zone socket and no DMI name.
	_, _, err := mdata.Detect(root, "")
	fmt.Println("detect:", errors.Is(err, mdata.ErrNoTransport))
	forced := "unix:" + root + "/metadata.sock"
	t, reason, err := mdata.Detect(root, forced)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("forced:", t.String() == forced, reason)

	// A simulated host, a client from it, and the same through a client
	// made with options.
	st := mdatatest.Default()
	st.SetString("sdc:hostname", hostname)
	st.SetString("hostname", hostname)
	h := mdatatest.NewHost(st)
	defer h.Close()
	c := h.Client()
	defer c.Close()
	v, err := c.Get(ctx, "sdc:hostname")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("get: %s\n", v)
	if err := c.Put(ctx, "consumer", []byte(hostname)); err != nil {
		log.Fatal(err)
	}
	keys, err := c.Keys(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("keys:", strings.Join(keys, ","))
	if err := c.Delete(ctx, "consumer"); err != nil {
		log.Fatal(err)
	}
	_, err = c.Get(ctx, "consumer")
	fmt.Println("deleted:", errors.Is(err, mdata.ErrNotFound))

	c2 := mdata.New(h.Transport(), &mdata.Options{Timeouts: mdata.Timeouts{Probe: 50 * time.Millisecond}})
	defer c2.Close()

	// datasource reads a SmartOS instance through that client.
	md, err := datasource.Read(ctx, datasource.SourceSmartOS, datasource.Options{MdataClient: c2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("smartos:", md.InstanceID == mdatatest.SampleUUID, md.Hostname)

	// datasource detection on the root computed at run time: an empty
	// tree holds no source.
	_, _, err = datasource.Detect(ctx, datasource.Options{Root: root})
	fmt.Println("no source:", errors.Is(err, datasource.ErrNoSource))
	fmt.Println("valid source:", datasource.ValidSource(datasource.SourceSmartOS), datasource.ValidSource(hostname))

	// netcfg parses a config built here and renders it.
	cfg, err := netcfg.Parse([]byte(fmt.Sprintf("version: 2\nethernets:\n  nic0:\n    match: {macaddress: %q}\n    set-name: %s\n    addresses: [192.0.2.10/24]\n", mac, "lan0")))
	if err != nil {
		log.Fatal(err)
	}
	nic := cfg.ByMAC(strings.ToUpper(mac))
	fmt.Println("netcfg:", nic.Name, nic.Addresses)
	sf, err := netcfg.Networkd.Render(netcfg.Detection{Stack: netcfg.Networkd}, cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	names := make([]string, 0, len(sf.Files))
	for n := range sf.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Println("networkd:", strings.Join(names, ","))
	// One bad field leaves out that field alone and says so; a document
	// that is not network config at all is an error of its own type.
	bad, err := netcfg.Parse([]byte("version: 1\nconfig:\n- {type: physical, name: " + hostname + ", subnets: [{type: static, address: 10.0.0.300/24}]}\n"))
	fmt.Println("bad field:", err == nil && len(bad.Notes) == 1)
	_, err = netcfg.Parse([]byte("version: 1\nconfig: {}\n"))
	var fe *netcfg.FieldError
	fmt.Println("field error:", errors.As(err, &fe))
}

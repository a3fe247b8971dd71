package mdatatest_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// A test serves the host on one end of net.Pipe and talks to it from the
// other, here with raw protocol lines.
func ExampleHost_Serve() {
	st := mdatatest.NewStore()
	st.SetString("sdc:hostname", "web01")
	h := mdatatest.NewHost(st)
	defer h.Close()

	host, guest := net.Pipe()
	go h.Serve(host)
	r := bufio.NewReader(guest)
	for _, line := range []string{"\n", "NEGOTIATE V2\n", "V2 29 35acd468 0a1b2c3d GET c2RjOmhvc3RuYW1l\n"} {
		guest.Write([]byte(line))
		reply, _ := r.ReadString('\n')
		fmt.Printf("%q\n", reply)
	}
	fmt.Println("served:", h.Stats().Served)
	// Output:
	// "invalid command\n"
	// "V2_OK\n"
	// "V2 25 56d408d8 0a1b2c3d SUCCESS d2ViMDE=\n"
	// served: 1
}

// A fault changes how the host answers; with a Count it acts only that
// many times, so the test can check that the client recovers.
func ExampleHost_SetFault() {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	h.SetFault(mdatatest.Fault{Mode: mdatatest.FailProbe, Count: 1})

	host, guest := net.Pipe()
	go h.Serve(host)
	r := bufio.NewReader(guest)
	for range 2 {
		guest.Write([]byte("\n"))
		reply, _ := r.ReadString('\n')
		fmt.Printf("%q\n", reply)
	}
	// Output:
	// "FAILURE\n"
	// "invalid command\n"
}

// A test of code that reads metadata hands it the host's client, or its
// transport when it makes its own client.
func ExampleHost_Client() {
	st := mdatatest.NewStore()
	st.SetString("sdc:hostname", "web01")
	h := mdatatest.NewHost(st)
	defer h.Close()
	c := h.Client()
	defer c.Close()

	v, err := c.Get(context.Background(), "sdc:hostname")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	fmt.Println("requests:", h.Stats().Requests["GET"], "on", h.Transport())
	// Output:
	// web01
	// requests: 1 on mdatatest:pipe
}

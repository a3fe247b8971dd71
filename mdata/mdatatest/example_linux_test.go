package mdatatest_test

import (
	"bufio"
	"fmt"
	"log"
	"time"

	"go.bug.st/serial"

	"github.com/seedkeeper/seedkeeper/mdata/mdatatest"
)

// A test starts a host on a pty and opens its slave like a serial port,
// as the client opens /dev/ttyS1 in a VM.
func ExampleHost_StartPTY() {
	h := mdatatest.NewHost(mdatatest.Default())
	defer h.Close()
	pty, err := h.StartPTY()
	if err != nil {
		log.Fatal(err)
	}

	port, err := serial.Open(pty.Path(), &serial.Mode{BaudRate: 115200})
	if err != nil {
		log.Fatal(err)
	}
	defer port.Close()
	port.SetReadTimeout(10 * time.Second)
	port.Write([]byte("\nNEGOTIATE V2\nV2 25 60f18662 7ff58343 GET c2RjOnV1aWQ=\n"))

	r := bufio.NewReader(port)
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(line)
	}
	// Output:
	// invalid command
	// V2_OK
	// V2 65 2cd4db13 7ff58343 SUCCESS NGExYjJjM2QtMDAwMC0xMTExLTIyMjItMzMzMzQ0NDQ1NTU1
}

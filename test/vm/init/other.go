//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "init: the test VM's init runs on Linux only")
	os.Exit(1)
}

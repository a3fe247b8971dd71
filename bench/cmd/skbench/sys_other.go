//go:build !unix

package main

import (
	"errors"
	"os"
)

// maxRSS is 0 where the system has no getrusage: the tables show "–".
func maxRSS(*os.ProcessState) int64 { return 0 }

func mkfifo(string) error { return errors.New("no FIFOs on this system") }

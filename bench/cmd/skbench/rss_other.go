//go:build !unix

package main

import "os"

// maxRSS is 0 where the system has no getrusage: the tables show "–".
func maxRSS(*os.ProcessState) int64 { return 0 }

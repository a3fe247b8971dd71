package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
)

const versionHelp = `Usage: seedkeeper version [--json]

Prints seedkeeper's version. --json prints schema_version, version, go
(the Go release it was built with), os and arch.

Exit status: 0, 3 usage.
`

// versionSchemaVersion is the version of "version --json".
const versionSchemaVersion = 1

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version")
	asJSON := fs.Bool("json", false, "")
	if code, ok := parseFlags(fs, args, versionHelp, stdout, stderr); !ok {
		return code
	}
	if !*asJSON {
		fmt.Fprintln(stdout, "seedkeeper", version)
		return exitOK
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.Encode(struct {
		SchemaVersion int    `json:"schema_version"`
		Version       string `json:"version"`
		Go            string `json:"go"`
		OS            string `json:"os"`
		Arch          string `json:"arch"`
	}{versionSchemaVersion, version, runtime.Version(), runtime.GOOS, runtime.GOARCH})
	return exitOK
}

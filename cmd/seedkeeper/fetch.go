package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/bound"
	"github.com/seedkeeper/seedkeeper/internal/safetext"
)

var fetchHelp = `Usage: seedkeeper fetch [--source NAME] [--seed PATH] [--json] [--show-secrets]
                        [--root DIR] [--config FILE] [--timeout DURATION]

Reads the metadata and prints it normalized, without writing anything.
The source is detected as "seedkeeper boot" detects it, unless --source
(` + strings.Join(datasource.Names(), ", ") + `) names one, or --seed gives a NoCloud
seed directory or image file (ISO9660 or FAT) to read instead.

--timeout bounds the whole read: 0 (the default) waits as long as it
takes; otherwise 1ms to 24h, as a duration (30s) or a number of seconds.

User-data, vendor-data, scripts and password-like meta-data keys are
shown as "<redacted: N bytes, sha256 PREFIX>" unless --show-secrets.

JSON fields: source, transport, items, instance_id, instance_id_defaulted,
hostname, machine_id, public_keys, network_config (the normalized network
configuration as a cloud-init v1 document, or null: leave the network
alone), network_drivers (null when the metadata sets none), user_data,
vendor_data, smartos (user_script, operator_script, legacy_user_data,
availability_zone, dns_domain), vmware_imc (a VMware customization spec's
kind, marker_id, post_gc_status, custom_script, password (whether it
sets one), nics, nics_dropped, waited; absent for other transports),
meta_data, dropped (the metadata fields
not used, and why; absent when none).

Exit status: 0, 1 no metadata source, 2 error, 3 usage, 10 timed out,
128+N stopped by signal N (SIGINT, SIGTERM).
`

// fetchSchemaVersion is the version of "fetch --json" (docs/json.md).
const fetchSchemaVersion = 1

func runFetch(args []string, stdout, stderr io.Writer) (code int) {
	fs := newFlags("fetch")
	root, cfgPath := commonFlags(fs)
	source := fs.String("source", "", "")
	seedPath := fs.String("seed", "", "")
	asJSON := fs.Bool("json", false, "")
	secrets := fs.Bool("show-secrets", false, "")
	timeoutFlag := fs.String("timeout", "0", "")
	if code, ok := parseFlags(fs, args, fetchHelp, stdout, stderr); !ok {
		return code
	}
	// Parsed here, not by the flag package, so that the range is the
	// one every wait has and the message does not quote the value: a
	// negative duration used to mean "wait for ever".
	timeout, err := bound.ParseDurationOff("--timeout", *timeoutFlag, bound.MinTimeout, bound.MaxTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper fetch: %v\n", err)
		return exitUsage
	}
	if *source != "" && !datasource.ValidSource(*source) {
		fmt.Fprintf(stderr, "seedkeeper fetch: --source %q: want one of %v\n", *source, datasource.Names())
		return exitUsage
	}
	if *seedPath != "" && *source != "" && *source != datasource.SourceNoCloud {
		fmt.Fprintln(stderr, "seedkeeper fetch: --seed reads a NoCloud seed; it cannot be combined with --source", *source)
		return exitUsage
	}
	e := newEnv(*root, *cfgPath, stderr)
	ctx, caught, stop := signalContext()
	defer stop()
	defer func() {
		if c, ok := caught(); ok {
			code = c
		}
	}()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	o := e.SourceOptions()
	o.Mdata.Progress = func(msg string) { fmt.Fprintf(stderr, "seedkeeper fetch: %s\n", safetext.Escape(msg)) }
	o.VMware.Redact = false // fetch writes nothing, guestinfo included
	var md *datasource.Metadata
	switch {
	case *seedPath != "":
		o.NoCloud.SeedPath = *seedPath
		md, err = datasource.Read(ctx, datasource.SourceNoCloud, o)
	case *source != "":
		md, err = datasource.Read(ctx, *source, o)
	default:
		md, _, err = datasource.Fetch(ctx, o)
	}
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper fetch: %s\n", safetext.Escape(err.Error()))
		if ctx.Err() == context.DeadlineExceeded {
			err = errTimedOut{err}
		}
		return exitCode(err)
	}
	out, err := agent.Normalize(md, *secrets)
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper fetch: %s\n", safetext.Escape(err.Error()))
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "<redacted: ...>", not "\u003credacted"
		doc := struct {
			SchemaVersion int `json:"schema_version"`
			*agent.Fetched
		}{fetchSchemaVersion, out}
		if err := enc.Encode(doc); err != nil {
			fmt.Fprintf(stderr, "seedkeeper fetch: writing JSON: %v\n", err)
			return exitError
		}
		return exitOK
	}
	printFetch(stdout, out)
	return exitOK
}

func printFetch(w io.Writer, o *agent.Fetched) {
	// Every value comes from the metadata host: escaped, so that escape
	// sequences do not act on the terminal (multi-line values keep their
	// lines).
	line := func(k, v string) { fmt.Fprintf(w, "%-22s %s\n", safetext.Escape(k)+":", safetext.Escape(v)) }
	block := func(k, head, body string) {
		fmt.Fprintf(w, "%-22s %s\n%s\n", k+":", head, safetext.EscapeLines(body))
	}
	line("source", o.Source)
	line("transport", o.Transport)
	line("instance-id", o.InstanceID)
	if o.InstanceIDDefaulted {
		line("", "(the source has none; platform default)")
	}
	line("hostname", o.Hostname)
	line("machine-id", o.MachineID)
	for _, k := range o.PublicKeys {
		line("public-key", abbreviate(k))
	}
	show := func(k string, v *string) {
		if v == nil {
			line(k, "(absent)")
		} else if o.Redacted {
			line(k, *v)
		} else {
			block(k, fmt.Sprintf("%d bytes:", len(*v)), *v)
		}
	}
	show("user-data", o.UserData)
	show("vendor-data", o.VendorData)
	if s := o.SmartOS; s != nil {
		show("user-script", s.UserScript)
		show("operator-script", s.OperatorScript)
		show("legacy user-data", s.LegacyUserData)
	}
	if o.NetworkDrivers != nil {
		line("network-drivers", strings.Join(o.NetworkDrivers, ","))
	}
	if o.NetworkConfig == nil {
		line("network", "(none: the network is left alone)")
	} else {
		b, _ := yaml.Marshal(o.NetworkConfig)
		block("network", "(cloud-init v1)", string(b))
	}
	for _, k := range slices.Sorted(maps.Keys(o.MetaData)) {
		b, _ := json.Marshal(o.MetaData[k])
		line("meta-data "+k, string(b))
	}
	for _, d := range o.Dropped {
		line("dropped", d)
	}
}

func abbreviate(s string) string {
	if len(s) <= 60 {
		return s
	}
	return s[:40] + "..." + s[len(s)-16:]
}

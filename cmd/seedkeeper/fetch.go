package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/seedkeeper/seedkeeper/datasource"
)

const fetchHelp = `Usage: seedkeeper fetch [--source NAME] [--seed PATH] [--json] [--show-secrets]
                        [--root DIR] [--config FILE] [--timeout DURATION]

Reads the metadata and prints it normalized, without writing anything.
The source is detected as "seedkeeper boot" detects it, unless --source
(smartos, vmware or nocloud) names one, or --seed gives a NoCloud seed
directory or image file (ISO9660 or FAT) to read instead.

User-data, vendor-data, scripts and password-like meta-data keys are
shown as "<redacted: N bytes, sha256 PREFIX>" unless --show-secrets.

JSON fields: source, transport, items, instance_id, instance_id_defaulted,
hostname, machine_id, public_keys, network_config (the normalized network
configuration as a cloud-init v1 document, or null: leave the network
alone), network_drivers (null when the metadata sets none), user_data,
vendor_data, smartos (user_script, operator_script, legacy_user_data,
availability_zone, dns_domain), meta_data.

Exit status: 0, 1 no metadata source, 2 error, 3 usage, 10 timed out.
`

// fetchOutput is the JSON schema of "seedkeeper fetch --json".
type fetchOutput struct {
	Source              string         `json:"source"`
	Transport           string         `json:"transport"`
	Items               []string       `json:"items"`
	InstanceID          string         `json:"instance_id"`
	InstanceIDDefaulted bool           `json:"instance_id_defaulted"`
	Hostname            string         `json:"hostname"`
	MachineID           string         `json:"machine_id"`
	PublicKeys          []string       `json:"public_keys"`
	NetworkConfig       any            `json:"network_config"`
	NetworkDrivers      []string       `json:"network_drivers"`
	UserData            *string        `json:"user_data"`
	VendorData          *string        `json:"vendor_data"`
	SmartOS             *fetchSmartOS  `json:"smartos,omitempty"`
	MetaData            map[string]any `json:"meta_data,omitempty"`
	Dropped             []string       `json:"dropped,omitempty"`
}

type fetchSmartOS struct {
	UserScript       *string `json:"user_script"`
	OperatorScript   *string `json:"operator_script"`
	LegacyUserData   *string `json:"legacy_user_data"`
	AvailabilityZone string  `json:"availability_zone"`
	DNSDomain        string  `json:"dns_domain"`
}

func runFetch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fetch", stderr)
	root, cfgPath := commonFlags(fs)
	source := fs.String("source", "", "")
	seedPath := fs.String("seed", "", "")
	asJSON := fs.Bool("json", false, "")
	secrets := fs.Bool("show-secrets", false, "")
	timeout := fs.Duration("timeout", 0, "")
	if code, ok := parseFlags(fs, args, fetchHelp, stdout, stderr); !ok {
		return code
	}
	if *source != "" && !datasource.ValidSource(*source) {
		fmt.Fprintf(stderr, "seedkeeper fetch: --source %q: want one of %v\n", *source, datasource.Sources)
		return exitUsage
	}
	if *seedPath != "" && *source != "" && *source != datasource.SourceNoCloud {
		fmt.Fprintln(stderr, "seedkeeper fetch: --seed reads a NoCloud seed; it cannot be combined with --source", *source)
		return exitUsage
	}
	e := newEnv(*root, *cfgPath, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	o := e.sourceOptions()
	o.Mdata.Progress = func(msg string) { fmt.Fprintf(stderr, "seedkeeper fetch: %s\n", msg) }
	o.VMware.Redact = false // fetch writes nothing, guestinfo included
	var md *datasource.Metadata
	var err error
	switch {
	case *seedPath != "":
		o.NoCloud.SeedPath = *seedPath
		md, err = datasource.Read(ctx, datasource.SourceNoCloud, o)
	case *source != "":
		md, err = datasource.Read(ctx, *source, o)
	default:
		md, _, err = datasource.Fetch(ctx, o)
	}
	switch {
	case errors.Is(err, datasource.ErrNoSource):
		fmt.Fprintf(stderr, "seedkeeper fetch: %v\n", err)
		return exitNoSource
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		fmt.Fprintf(stderr, "seedkeeper fetch: %v\n", err)
		return exitTryAgain
	case err != nil:
		fmt.Fprintf(stderr, "seedkeeper fetch: %v\n", err)
		return exitError
	}
	out, err := normalize(md, *secrets)
	if err != nil {
		fmt.Fprintf(stderr, "seedkeeper fetch: %v\n", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "<redacted: ...>", not "\u003credacted"
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "seedkeeper fetch: writing JSON: %v\n", err)
			return exitError
		}
		return exitOK
	}
	printFetch(stdout, out)
	return exitOK
}

func normalize(md *datasource.Metadata, secrets bool) (*fetchOutput, error) {
	out := &fetchOutput{
		Source: md.Source, Transport: md.Origin.Transport, Items: md.Origin.Items,
		InstanceID: md.InstanceID, InstanceIDDefaulted: md.InstanceIDDefaulted,
		Hostname: md.Hostname, MachineID: md.MachineID, PublicKeys: md.PublicKeys,
		UserData: secret(md.UserData, md.UserData != nil, secrets), VendorData: secret(md.VendorData, md.VendorData != nil, secrets),
		MetaData: redactMeta(md.MetaData, secrets), Dropped: md.Warnings,
	}
	if out.PublicKeys == nil {
		out.PublicKeys = []string{}
	}
	if md.NetworkDriversSet {
		out.NetworkDrivers = append([]string{}, md.NetworkDrivers...)
	}
	if md.Network != nil {
		v1, err := md.Network.MarshalV1()
		if err != nil {
			return nil, fmt.Errorf("normalizing the network configuration: %w", err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(v1, &doc); err != nil {
			return nil, fmt.Errorf("normalizing the network configuration: %w", err)
		}
		out.NetworkConfig = doc
	}
	if s := md.SmartOS; s != nil {
		out.SmartOS = &fetchSmartOS{
			UserScript:       secret(s.UserScript, s.HasUserScript, secrets),
			OperatorScript:   secret(s.OperatorScript, s.HasOperator, secrets),
			LegacyUserData:   secret(s.LegacyUserData, s.HasLegacyUser, secrets),
			AvailabilityZone: s.AvailabilityZone,
			DNSDomain:        s.DNSDomain,
		}
	}
	return out, nil
}

// secret shows a value, or a redaction that still tells whether it
// changed. Absent values are null.
func secret(b []byte, present, show bool) *string {
	if !present {
		return nil
	}
	var s string
	if show {
		s = string(b)
	} else {
		sum := sha256.Sum256(b)
		s = fmt.Sprintf("<redacted: %d bytes, sha256 %x>", len(b), sum[:6])
	}
	return &s
}

var passwordLike = regexp.MustCompile(`(?i)(pass|secret|token|_pw$|private)`)

func redactMeta(m map[string]any, show bool) map[string]any {
	if m == nil || show {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if passwordLike.MatchString(k) {
			b, _ := json.Marshal(v)
			out[k] = *secret(b, true, false)
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			v = redactMeta(sub, show)
		}
		out[k] = v
	}
	return out
}

func printFetch(w io.Writer, o *fetchOutput) {
	line := func(k, v string) { fmt.Fprintf(w, "%-22s %s\n", k+":", v) }
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
		} else if strings.HasPrefix(*v, "<redacted") {
			line(k, *v)
		} else {
			line(k, fmt.Sprintf("%d bytes:\n%s", len(*v), *v))
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
		line("network", "(cloud-init v1)\n"+string(b))
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

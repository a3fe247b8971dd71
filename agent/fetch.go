package agent

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/redact"
)

// Fetched is the metadata normalized for people and scripts: the JSON
// schema of "seedkeeper fetch --json". Secrets are redacted unless asked
// for (see Normalize).
type Fetched struct {
	Source              string          `json:"source"`
	Transport           string          `json:"transport"`
	Items               []string        `json:"items"`
	InstanceID          string          `json:"instance_id"`
	InstanceIDDefaulted bool            `json:"instance_id_defaulted"`
	Hostname            string          `json:"hostname"`
	MachineID           string          `json:"machine_id"`
	PublicKeys          []string        `json:"public_keys"`
	NetworkConfig       any             `json:"network_config"`
	NetworkDrivers      []string        `json:"network_drivers"`
	UserData            *string         `json:"user_data"`
	VendorData          *string         `json:"vendor_data"`
	SmartOS             *FetchedSmartOS `json:"smartos,omitempty"`
	// VMwareIMC is what a VMware customization spec said beyond the
	// fields above; it holds no secret.
	VMwareIMC *datasource.IMCSpec `json:"vmware_imc,omitempty"`
	MetaData  map[string]any      `json:"meta_data,omitempty"`
	Dropped   []string            `json:"dropped,omitempty"` // fields of the metadata not used, and why
	// Redacted is whether Normalize replaced the secret values (user-data,
	// vendor-data, scripts) by a summary; a value shown in full may look
	// like one, so a printer asks this rather than the text.
	Redacted bool `json:"-"`
}

// FetchedSmartOS is the SmartOS part of Fetched.
type FetchedSmartOS struct {
	UserScript       *string `json:"user_script"`
	OperatorScript   *string `json:"operator_script"`
	LegacyUserData   *string `json:"legacy_user_data"`
	AvailabilityZone string  `json:"availability_zone"`
	DNSDomain        string  `json:"dns_domain"`
}

// Normalize turns md into a Fetched: the network configuration as a
// cloud-init v1 document, absent values null, and user-data, vendor-data,
// scripts and secret-looking meta-data (password-like keys at any depth,
// URLs with credentials; see redact.Value) shown as "<redacted: N bytes,
// sha256 PREFIX>" (which still tells whether they changed) unless secrets.
func Normalize(md *datasource.Metadata, secrets bool) (*Fetched, error) {
	out := &Fetched{
		Source: md.Source, Transport: md.Origin.Transport, Items: md.Origin.Items,
		InstanceID: md.InstanceID, InstanceIDDefaulted: md.InstanceIDDefaulted,
		Hostname: md.Hostname, MachineID: md.MachineID, PublicKeys: md.PublicKeys,
		UserData: secret(md.UserData, md.UserData != nil, secrets), VendorData: secret(md.VendorData, md.VendorData != nil, secrets),
		MetaData: redactMeta(md.MetaData, secrets), Dropped: md.Warnings,
		Redacted: !secrets, VMwareIMC: md.VMwareIMC,
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
		out.SmartOS = &FetchedSmartOS{
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
// changed (redact.Summary). Absent values are null.
func secret(b []byte, present, show bool) *string {
	if !present {
		return nil
	}
	var s string
	if show {
		s = string(b)
	} else {
		s = redact.Summary(b)
	}
	return &s
}

// redactMeta hides secrets in meta-data at any depth, lists included
// (passwords in a users list, a seedfrom URL's user:password), through
// the one redactor, redact.Value.
func redactMeta(m map[string]any, show bool) map[string]any {
	if m == nil || show {
		return m
	}
	return redact.Value(m, json.Marshal).(map[string]any)
}

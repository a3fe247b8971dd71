package netcfg

import "errors"

// ErrDisabled is returned by Parse for a configuration that says
// {config: disabled}: the network must be left alone.
var ErrDisabled = errors.New("network configuration is disabled")

// Parse reads a cloud-init network configuration, version 1 or 2, YAML or
// JSON, with or without a top-level "network:" key.
func Parse(data []byte) (*Config, error) {
	return nil, errors.New("netcfg.Parse: not implemented yet")
}

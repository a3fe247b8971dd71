// Package datasource reads instance metadata from the platforms seedkeeper
// supports (SmartOS/Triton mdata, VMware guestinfo and NoCloud seeds) and
// turns each into one Metadata value: instance ID, hostname, keys, user-data,
// vendor-data, network configuration and the machine identity, together with
// where each came from.
package datasource

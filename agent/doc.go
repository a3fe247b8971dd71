// Package agent runs seedkeeper's flows on one machine: Boot (detect the
// metadata source, read it, decide the instance ID, write the NoCloud seed
// for cloud-init, bring the owned NICs to the metadata's network, keep the
// outcome in the status file) and Watch (the hotplug daemon). Its data
// comes from the datasource package and the system files under Env.Root;
// cmd/seedkeeper only turns flags into an Env and outcomes into exit codes.
//
// Boot and Watch take an Env (the root, the configuration, the log, the
// service manager to notify) and return errors a caller can branch on:
// datasource.ErrNoSource when there is no metadata here, apply.ErrPartial
// when the network was applied only in part. Every failure is logged
// before it is returned.
//
// # Stability
//
// This package is seedkeeper's own plumbing, not part of its stable API
// (mdata, mdata/mdatatest, datasource, netcfg): it may change in any
// release, and its exported signatures may name internal types (such as
// the --root of internal/sysroot). It may move under internal/ later.
package agent

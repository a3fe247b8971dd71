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
package agent

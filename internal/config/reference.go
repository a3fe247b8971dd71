package config

// Reference is the configuration file's reference: every key with its
// default or an example and what it does, as YAML that Load takes. The
// README's Configuration section holds it verbatim, and
// seedkeeper-config(5) is made from it (packaging/genman); a test pins
// every key of Config to it.
const Reference = `sources: [smartos, vmware, nocloud]   # detection order; drop one to disable it
mdata:
  transport: ""            # force serial:PATH, unix:PATH or vsock:CID:PORT (SEEDKEEPER_MDATA wins)
boot:
  wait: 0                  # bound the wait for a detected mdata host (e.g. 10m); 0 waits as long as it takes
  device_wait: 60s         # no source at first: wait up to this for udevd to run and its queue to drain (late CD-ROM), then look again; ends early when udev is done; 0: no wait
network:
  owner: seedkeeper        # or cloud-init: hand it the network-config and apply nothing
events:
  network: [boot, hotplug] # cloud-init's names; boot-new-instance always applies
hotplug:
  drivers: [virtio_net, e1000]   # the allowlist; default by platform
vmware:
  redact: false            # clear guestinfo user-data/metadata after reading (breaks later re-reads)
  network_wait: 60s        # bound the wait the metadata's wait-on-network asks for; 0: no wait
  imc_wait: 15s            # wait for VMware Tools to write a customization spec when guestinfo is empty (every boot pays it); 0: no wait
metrics:
  textfile_dir: ""         # node_exporter's textfile directory: seedkeeper watch keeps seedkeeper.prom there current; "": none
`

// ReferenceIntro is what seedkeeper-config(5) says before Reference.
const ReferenceIntro = `seedkeeper reads /etc/seedkeeper/config.yaml (or the file --config
names); every key has a default, so no file is needed. Unknown keys are
errors (a typo must not pass silently); a file that cannot be used is
logged, the defaults are used, and the hotplug allowlist then allows
nothing. "seedkeeper status" says which file is in force, or why it is
not used.

Durations are Go durations ("90s", "5m") or a number of seconds.
`

// Command init is the PID 1 of the test VM that package
// github.com/seedkeeper/seedkeeper/test/vm boots under QEMU. It is built
// statically and put into the initramfs as /init, next to /sbin/seedkeeper.
//
// It mounts /proc, /sys, /dev (devtmpfs), /run and /tmp, links /var/run to
// /run (where named network namespaces live), loads the kernel modules
// listed one a line in /skvm/modules, then in /skvm/modules.vm (the ones a
// single VM asks for; paths, in dependency order) with finit_module, runs
// the steps of /skvm/script, and powers the machine off. The host side
// reads what happened from the console (ttyS0): every fact is one line
// that starts with "SKVM " (see the step list below), and the output of
// the programs it runs is copied there with a "[name] " prefix.
//
// Steps, one a line, fields separated by spaces ("#" starts a comment):
//
//	run NAME PROG ARGS...     run PROG and wait; prints "SKVM stdout NAME <base64>"
//	                          and "SKVM exit NAME CODE"
//	bg NAME PROG ARGS...      start PROG with NOTIFY_SOCKET set and wait for its
//	                          READY=1 (60 s at most): "SKVM ready NAME"
//	stop NAME                 SIGTERM a bg program and wait: "SKVM exit NAME CODE"
//	file PATH                 "SKVM file PATH <base64>" (or "SKVM missing PATH ERROR")
//	sha PATH                  "SKVM sha256 PATH HEX" (or "SKVM missing PATH ERROR")
//	wait-path PATH SECONDS    wait for PATH to exist: "SKVM path PATH"
//	wait-addr MAC CIDR SECS   wait for the link with MAC to carry CIDR:
//	                          "SKVM addr MAC CIDR IFNAME"
//	links                     "SKVM link NAME MAC DRIVER ADDR,ADDR..." for every link
//	env KEY [VALUE...]        set KEY (unset it without a value) for the programs
//	                          later steps start: "SKVM env KEY=VALUE"
//	mdata-vsock PORT          start a simulated metadata host (mdatatest.Default's
//	                          store) listening on vsock PORT, any local CID, serving
//	                          each connection as a session; its transcript goes to
//	                          the console as "[mdata-vsock] ..." lines:
//	                          "SKVM mdata-vsock listening PORT ADDR LOCALCID"
//	mdata-vsock-fault MODE [COUNT]
//	                          make that host misbehave (an mdatatest fault mode, e.g.
//	                          drop, silent; "normal" ends it) for COUNT uses (default
//	                          all): "SKVM mdata-vsock fault DESCRIPTION"
//	mdata-vsock-stop          stop that host: "SKVM mdata-vsock stats JSON"
//	                          (mdatatest.Stats); done at the end if still running
//	mark TEXT                 "SKVM mark TEXT", for the host to wait on
//
// A step that cannot do its job prints "SKVM error STEP: WHY" and the
// script goes on (the host decides what is fatal), except after a failed
// bg step, whose daemon the rest needs. The last line is "SKVM done".
package main

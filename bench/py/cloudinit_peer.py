#!/usr/bin/python3
"""Drive Debian's cloud-init 22.4.2 as a benchmark peer.

Run it with /usr/bin/python3 (Debian's cloud-init is installed for the
system Python, not for any python3 first on PATH). Each mode is one whole
process, as a user experiences it:

  get DEVICE KEY     JoyentMetadataLegacySerialClient(device, timeout=5,
                     smartos_type="kvm"): open_transport, get, close_transport;
                     prints the value on stdout.
  getdata DEVICE     DataSourceSmartOS._get_data() pointed at DEVICE (the
                     18-key boot sequence), with get_smartos_environ patched to
                     "kvm" and every path it writes moved under a temporary
                     directory; prints the instance ID.
  nocloud SEEDDIR    DataSourceNoCloud.get_data() reading SEEDDIR copied into
                     a temporary cloud_dir's seed/nocloud; prints the instance
                     ID.

Exit status 0 on success, 1 when the key or the data is missing, 2 on any
exception. The last line on stderr is JSON with in-process timings in
seconds: "import" (importing cloud-init), "op" (the operation alone).
"""

import json
import sys
import time

T0 = time.monotonic()


def main(argv):
    import tempfile

    timings = {}
    mode = argv[1] if len(argv) > 1 else ""
    rc = 2
    try:
        if mode == "get" and len(argv) == 4:
            from cloudinit.sources import DataSourceSmartOS as ds

            timings["import"] = time.monotonic() - T0
            t = time.monotonic()
            c = ds.JoyentMetadataLegacySerialClient(
                device=argv[2], timeout=5, smartos_type="kvm"
            )
            c.open_transport()
            try:
                v = c.get(argv[3])
            finally:
                c.close_transport()
            timings["op"] = time.monotonic() - t
            if v is None:
                rc = 1
            else:
                sys.stdout.write(v)
                rc = 0
        elif mode == "getdata" and len(argv) == 3:
            from cloudinit import distros, helpers
            from cloudinit.sources import DataSourceSmartOS as ds

            timings["import"] = time.monotonic() - T0
            with tempfile.TemporaryDirectory() as tmp:
                ds.get_smartos_environ = lambda *a, **k: "kvm"
                ds.LEGACY_USER_D = tmp + "/var/db"
                import os

                os.makedirs(ds.LEGACY_USER_D)
                paths = helpers.Paths(
                    {"cloud_dir": tmp + "/cloud", "run_dir": tmp + "/run"}
                )
                cfg = {"datasource": {"SmartOS": {"serial_device": argv[2]}}}
                distro = distros.fetch("debian")("debian", {}, paths)
                t = time.monotonic()
                d = ds.DataSourceSmartOS(cfg, distro, paths)
                d._set_provisioned = lambda: None
                ok = d._get_data()
                timings["op"] = time.monotonic() - t
                if ok:
                    sys.stdout.write(d.get_instance_id() + "\n")
                    rc = 0
                else:
                    rc = 1
        elif mode == "nocloud" and len(argv) == 3:
            import os
            import shutil

            from cloudinit import distros, helpers
            from cloudinit.sources import DataSourceNoCloud as nc

            timings["import"] = time.monotonic() - T0
            with tempfile.TemporaryDirectory() as tmp:
                paths = helpers.Paths(
                    {"cloud_dir": tmp + "/cloud", "run_dir": tmp + "/run"}
                )
                seed = os.path.join(paths.seed_dir, "nocloud")
                shutil.copytree(argv[2], seed)
                distro = distros.fetch("debian")("debian", {}, paths)
                t = time.monotonic()
                d = nc.DataSourceNoCloud(
                    {"datasource": {"NoCloud": {"fs_label": None}}},
                    distro,
                    paths,
                )
                ok = d.get_data()
                if ok:
                    _ = d.network_config
                timings["op"] = time.monotonic() - t
                if ok:
                    sys.stdout.write(d.get_instance_id() + "\n")
                    rc = 0
                else:
                    rc = 1
        else:
            sys.stderr.write(__doc__)
            return 3
    except Exception as e:  # the peer's failure is a measured outcome
        sys.stderr.write("error: %s: %s\n" % (type(e).__name__, e))
        rc = 2
    timings["total"] = time.monotonic() - T0
    sys.stderr.write(json.dumps(timings) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))

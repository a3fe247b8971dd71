"""Run cloud-init's own NoCloud datasources (local, then network stage)
against a seed directory, with the system config of a drop-in and a
kernel command line given, and print what each claims as JSON. A fetch
over the network fails the probe. Used by packaging's drop-in tests.

usage: nocloud_probe.py DROPIN SEEDDIR CMDLINE
"""
import json
import sys
import unittest.mock as mock

import yaml
from cloudinit import distros, helpers
from cloudinit.sources import DataSourceNoCloud as nc

dropin, seed_dir, cmdline = sys.argv[1:4]
with open(dropin) as f:
    sys_cfg = yaml.safe_load(f)
# The drop-in's seedfrom names the seed directory of a real system;
# here it is the test's.
ds_cfg = sys_cfg.setdefault("datasource", {}).setdefault("NoCloud", {})
if ds_cfg.get("seedfrom") == "file:///var/lib/cloud/seed/nocloud/":
    ds_cfg["seedfrom"] = "file://" + seed_dir.rstrip("/") + "/"
cloud_dir = seed_dir.rsplit("/seed/", 1)[0]
paths = helpers.Paths({"cloud_dir": cloud_dir, "run_dir": cloud_dir + "/run"})
distro = distros.fetch("debian")("debian", {}, paths)


def no_network(url, *a, **k):
    raise RuntimeError("fetched over the network: " + url.split("://")[0])


out = {}
for cls in (nc.DataSourceNoCloud, nc.DataSourceNoCloudNet):
    with mock.patch("cloudinit.util.get_cmdline", return_value=cmdline), \
         mock.patch("cloudinit.dmi.read_dmi_data", return_value=None), \
         mock.patch("cloudinit.url_helper.readurl", side_effect=no_network):
        ds = cls(sys_cfg, distro, paths)
        try:
            ok = ds._get_data()
            out[cls.dsname + ("Net" if cls is nc.DataSourceNoCloudNet else "")] = {
                "claimed": bool(ok),
                "instance_id": ds.metadata.get("instance-id") if ok else None,
                "user_data": (ds.userdata_raw or b"").decode() if ok else None,
            }
        except Exception as e:  # what cloud-init's search would log and skip
            out[cls.__name__] = {"error": str(e)}
print(json.dumps(out, sort_keys=True))

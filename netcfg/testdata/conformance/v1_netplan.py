#!/usr/bin/python3
"""Render v1 network configs to netplan v2 the way cloud-init does.

Used by netcfg's TestCloudInitNetplanConformance. Reads a JSON object on
stdin, name -> the text of a v1 document (YAML or JSON, with or without
a top-level "network:" key), and prints one JSON object, name -> the
netplan YAML that Debian's cloud-init writes for it on a netplan image
(cloudinit.net.network_state, then cloudinit.net.netplan.Renderer), or
{"error": "..."} when cloud-init refuses the document.
"""

import json
import sys

import yaml

from cloudinit.net import netplan, network_state


def render(text):
    cfg = yaml.safe_load(text)
    if "version" not in cfg and "network" in cfg:
        cfg = cfg["network"]
    state = network_state.parse_net_config_data(cfg, skip_broken=False)
    return netplan.Renderer(config={})._render_content(state)


def main():
    out = {}
    for name, text in json.load(sys.stdin).items():
        try:
            out[name] = render(text)
        except Exception as e:  # cloud-init's refusal is the answer
            out[name] = {"error": "%s: %s" % (type(e).__name__, e)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Summarise network configs the way cloud-init itself reads them.

Used by netcfg's TestIntegrationCloudInitAgrees. Reads a JSON list of jobs
on stdin:

    [{"name": "...", "text": "<YAML or JSON document>",
      "smartos": false, "skip_broken": false, "no_metric": false}, ...]

For each job it runs Debian's cloud-init
(cloudinit.net.network_state.parse_net_config_data; for "smartos" jobs,
DataSourceSmartOS.convert_smartos_network_data first, on a document with
the keys nics, routes, resolvers, dns_domain) and prints one JSON object,
name -> summary or {"error": "..."}, with:

    interfaces: [{name, type, mac, mtu, addresses, dhcp4, dhcp6, slaac,
                  routes}] sorted by name, limited to the names the input
                declares (cloud-init adds placeholders for bond and bridge
                members that are not defined)
    routes:      global routes
    nameservers, search: every DNS server and search domain anywhere
                (global, per interface, per subnet), sorted, unique

Addresses are "addr/prefix" and routes "to via metric", normalised with
Python's ipaddress module, so that the Go side can build the same summary.
"""

import ipaddress
import json
import sys

import yaml

from cloudinit.net import network_state
from cloudinit.sources import DataSourceSmartOS


def route_text(r, no_metric):
    net = r.get("network") or r.get("destination")
    to = ipaddress.ip_network("%s/%s" % (net, r.get("prefix")), strict=False)
    via = r.get("gateway")
    via = str(ipaddress.ip_address(via)) if via else "-"
    metric = 0 if no_metric else int(r.get("metric") or 0)
    return "%s %s %d" % (to, via, metric)


def default_route(gw, metric):
    a = ipaddress.ip_address(gw)
    to = "0.0.0.0/0" if a.version == 4 else "::/0"
    return "%s %s %d" % (to, a, metric)


def rewrite_default_routes(cfg):
    """Write v2 "to: default" as 0.0.0.0/0 or ::/0 (by the family of via).

    netplan defines "default" so, and newer cloud-init accepts it, but
    22.4.2 raises "Address default is not a valid ip address"."""
    for sec in ("ethernets", "bonds", "bridges", "vlans"):
        for val in (cfg.get(sec) or {}).values():
            for r in (val or {}).get("routes") or []:
                if r.get("to") == "default":
                    v6 = ":" in str(r.get("via", ""))
                    r["to"] = "::/0" if v6 else "0.0.0.0/0"


def declared_names(cfg):
    if cfg.get("version") == 2:
        names = set()
        for sec in ("ethernets", "bonds", "bridges", "vlans"):
            for key, val in (cfg.get(sec) or {}).items():
                names.add((val or {}).get("set-name") or key)
        return names
    return {
        e["name"]
        for e in cfg.get("config") or []
        if e.get("type") in ("physical", "bond", "bridge", "vlan")
    }


def as_list(v):
    if v is None:
        return []
    if isinstance(v, str):
        return v.split()
    return list(v)


def summarise(cfg, skip_broken, no_metric):
    state = network_state.parse_net_config_data(cfg, skip_broken=skip_broken)
    names = declared_names(cfg)
    ns = set(as_list(state.dns_nameservers))
    search = set(as_list(state.dns_searchdomains))
    ifaces = []
    for iface in state.iter_interfaces():
        if iface["name"] not in names:
            continue
        addrs, routes = set(), set()
        dhcp4 = dhcp6 = slaac = False
        for s in iface.get("subnets") or []:
            t = s["type"]
            if t in ("dhcp", "dhcp4"):
                dhcp4 = True
            if t in ("dhcp6", "ipv6_dhcpv6-stateful", "ipv6_dhcpv6-stateless"):
                dhcp6 = True
            if t in ("ipv6_slaac", "ipv6_dhcpv6-stateless"):
                slaac = True
            metric = 0 if no_metric else int(s.get("metric") or 0)
            if t in ("static", "static6"):
                addrs.add(str(ipaddress.ip_interface(
                    "%s/%s" % (s["address"], s["prefix"]))))
                if s.get("gateway"):
                    routes.add(default_route(s["gateway"], metric))
            for r in s.get("routes") or []:
                routes.add(route_text(r, no_metric))
            ns.update(as_list(s.get("dns_nameservers")))
            search.update(as_list(s.get("dns_search")))
        dns = iface.get("dns") or {}
        ns.update(as_list(dns.get("addresses") or dns.get("nameservers")))
        search.update(as_list(dns.get("search")))
        mac = iface.get("mac_address")
        ifaces.append({
            "name": iface["name"],
            "type": iface["type"],
            "mac": mac.lower() if mac else "",
            "mtu": int(iface.get("mtu") or 0),
            "addresses": sorted(addrs),
            "dhcp4": dhcp4,
            "dhcp6": dhcp6,
            "slaac": slaac,
            "routes": sorted(routes),
        })
    return {
        "interfaces": sorted(ifaces, key=lambda i: i["name"]),
        "routes": sorted({route_text(r, no_metric) for r in state.iter_routes()}),
        "nameservers": sorted(str(ipaddress.ip_address(a)) for a in ns),
        "search": sorted(search),
    }


def main():
    out = {}
    for job in json.load(sys.stdin):
        try:
            doc = yaml.safe_load(job["text"])
            if job.get("smartos"):
                doc = DataSourceSmartOS.convert_smartos_network_data(
                    network_data=doc.get("nics") or [],
                    dns_servers=doc.get("resolvers"),
                    dns_domain=doc.get("dns_domain"),
                    routes=doc.get("routes"),
                )
            elif "network" in doc and "version" not in doc:
                # The wrapper is a NoCloud file-format matter (22.4.2's
                # NoCloud rejects it); network_state wants the inside.
                doc = doc["network"]
            if doc.get("version") == 2:
                rewrite_default_routes(doc)
            out[job["name"]] = summarise(
                doc, job.get("skip_broken", False), job.get("no_metric", False))
        except Exception as e:  # reported to the Go test, which fails
            out[job["name"]] = {"error": "%s: %s" % (type(e).__name__, e)}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

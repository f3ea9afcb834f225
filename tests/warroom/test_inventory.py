"""Inventory files: defaults, groups, labels; bad entries are reported, never fatal."""
import pytest

from pinscope.collectors.inventory import InventoryError, load_inventory

INV = """
defaults: {user: ops, sudo: true}
groups:
  trading: {labels: {pool: trading}, root: /host, port: 2222}
nodes:
  - {name: trade-1, host: 10.0.0.5, groups: [trading], labels: {zone: a}}
  - {host: worker-9, user: root, sudo: false, colour: blue}
  - host: "fe80::1"
  - {name: nohost}
  - {host: h, port: "22x"}
  - {name: trade-1, host: dup}
  - 42
  - local
"""


def test_inventory_merges_and_reports():
    targets, probs = load_inventory(INV, "inv.yaml")
    by = {t.name: t for t in targets}
    t1 = by["trade-1"]
    assert t1.address == "ops@10.0.0.5:2222" and t1.root == "/host" and t1.sudo
    assert t1.labels == {"pool": "trading", "zone": "a"} and t1.groups == ("trading",)
    assert by["worker-9"].address == "root@worker-9" and not by["worker-9"].sudo
    assert by["fe80::1"].address == "ops@[fe80::1]"
    assert by["local"].address == "local"
    msgs = " | ".join(p.message for p in probs)
    for needle in ("unknown key 'colour'", "no host", "port '22x'", "duplicate name 'trade-1'", "nodes[6] is not a mapping"):
        assert needle in msgs
    assert t1.matches("pool=trad") and t1.matches("TRADE") and not t1.matches("zone=b")


@pytest.mark.parametrize("bad", ["nodes: [", "just a string", "nodes: []", "{defaults: 3, nodes: [a]}"])
def test_inventory_garbage_is_one_error(bad):
    with pytest.raises(InventoryError):
        load_inventory(bad, "x")

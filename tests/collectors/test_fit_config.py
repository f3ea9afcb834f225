"""The kubelet configuration fields the prediction of kubelet's CPU decisions needs (issue 36)."""

from pinscope.collectors.parse.kubelet import parse_kubelet_config


def test_topology_manager_options_are_read():
    """max-allowable-numa-nodes and prefer-closest-numa-nodes change kubelet's decision: the
    configuration's topologyManagerPolicyOptions (and the flag) reach the prediction."""
    text = ("topologyManagerPolicy: best-effort\n"
            "topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n  max-allowable-numa-nodes: \"16\"\n")
    cfg = parse_kubelet_config(text, "/var/lib/kubelet/config.yaml", [], None, [])
    assert cfg.topology_manager_policy_options == {"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "16"}
    cfg = parse_kubelet_config(None, None, [], ["kubelet", "--topology-manager-policy-options=max-allowable-numa-nodes=12"], [])
    assert cfg.topology_manager_policy_options == {"max-allowable-numa-nodes": "12"}

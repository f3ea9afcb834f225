"""Device-manager checkpoints as real nodes wrote them (kubelet_internal_checkpoint), verbatim, with their sources.

KIND_TEGRA: a kind node on an NVIDIA Jetson (kindest/node v1.37.0), `docker exec ... cat
/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint` in a public write-up "Appendix A. A local GPU
cluster with kind": one GPU, no NUMA affinity ("-1"), checksum 3660592824.
REAL_V1_37_2, REAL_V1_35_4: written by the real kubelets of tests/cluster (k8s.io/kubernetes v1.37.2 and v1.35.4, built
from their modules), `cat /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint` while a Guaranteed pod held one
example.com/widget of our device plugin (tests/cluster/src/device-plugin: 2 devices on NUMA node 0); both releases write
the same shape (checkpoint.go unchanged between them: Data {PodDeviceEntries, RegisteredDevices}, Checksum).
REAL_V1_35_4_NO_POD: the same node before the pod: kubelet writes PodDeviceEntries null (a nil slice), not [].
NODE2_*: a public Topology Manager test write-up (a 28-CPU, 2-NUMA node "node2" with three NVIDIA GPUs, device
plugin nvidia.com/gpu; GPU UUIDs keyed by NUMA node): NODE2_SPLIT is its last case, where a 16-CPU pod
(9388acc6, CPUs 1-13,17-19 on both NUMA nodes) got GPU-77a7 on NUMA 0 while the other pod's GPU sits on NUMA 1.
"""

KIND_TEGRA = ('{"Data":{"PodDeviceEntries":[{"PodUID":"bf52b2cd-b611-4e79-86b1-280b283185c3","ContainerName":"check",'
              '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"-1":["tegra"]},'
              '"AllocResp":"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],'
              '"RegisteredDevices":{"nvidia.com/gpu":["tegra"]}},"Checksum":3660592824}')

NODE2_SPLIT = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"f21fe02b-e6e2-4d04-9a4a-9e57367fa324","ContainerName":"app",'
    '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"1":["GPU-c1e9f249-b37b-81c2-a8d9-ba5ca0294841"]},'
    '"AllocResp":"CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS1jMWU5ZjI0OS1iMzdiLTgxYzItYThkOS1iYTVjYTAyOTQ4NDEaJAoOL2'
    'Rldi9udmlkaWFjdGwSDi9kZXYvbnZpZGlhY3RsGgJydxomCg8vZGV2L252aWRpYS11dm0SDy9kZXYvbnZpZGlhLXV2bRoCcncaMgoVL2Rldi9udmlk'
    'aWEtdXZtLXRvb2xzEhUvZGV2L252aWRpYS11dm0tdG9vbHMaAnJ3Gi4KEy9kZXYvbnZpZGlhLW1vZGVzZXQSEy9kZXYvbnZpZGlhLW1vZGVzZXQaAnJ3'
    'GiAKDC9kZXYvbnZpZGlhMhIML2Rldi9udmlkaWEyGgJydw=="},'
    '{"PodUID":"9388acc6-a396-4f03-a353-ce153da46aaf","ContainerName":"app","ResourceName":"nvidia.com/gpu",'
    '"DeviceIDs":{"0":["GPU-77a702db-e37f-3a74-d46d-c5713f66058c"]},'
    '"AllocResp":"CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS03N2E3MDJkYi1lMzdmLTNhNzQtZDQ2ZC1jNTcxM2Y2NjA1OGMaJAoOL2'
    'Rldi9udmlkaWFjdGwSDi9kZXYvbnZpZGlhY3RsGgJydxomCg8vZGV2L252aWRpYS11dm0SDy9kZXYvbnZpZGlhLXV2bRoCcncaMgoVL2Rldi9udmlk'
    'aWEtdXZtLXRvb2xzEhUvZGV2L252aWRpYS11dm0tdG9vbHMaAnJ3Gi4KEy9kZXYvbnZpZGlhLW1vZGVzZXQSEy9kZXYvbnZpZGlhLW1vZGVzZXQaAnJ3'
    'GiAKDC9kZXYvbnZpZGlhMBIML2Rldi9udmlkaWEwGgJydw=="}],'
    '"RegisteredDevices":{"nvidia.com/gpu":["GPU-77a702db-e37f-3a74-d46d-c5713f66058c",'
    '"GPU-9b341c59-f96b-ba85-c137-78c3652fea65","GPU-c1e9f249-b37b-81c2-a8d9-ba5ca0294841"]}},"Checksum":4148283274}')

REAL_V1_37_2 = ('{"Data":{"PodDeviceEntries":[{"PodUID":"da7d0c2f-f625-4009-90c0-0e2df8208c7f","ContainerName":"work",'
                '"ResourceName":"example.com/widget","DeviceIDs":{"0":["widget-1"]},'
                '"AllocResp":"ChoKDldJREdFVF9ERVZJQ0VTEgh3aWRnZXQtMQ=="}],'
                '"RegisteredDevices":{"example.com/widget":["widget-0","widget-1"]}},"Checksum":2733776436}')

REAL_V1_35_4 = ('{"Data":{"PodDeviceEntries":[{"PodUID":"2d84432c-62f5-473c-b4a1-c3c4ca017d30","ContainerName":"work",'
                '"ResourceName":"example.com/widget","DeviceIDs":{"0":["widget-0"]},'
                '"AllocResp":"ChoKDldJREdFVF9ERVZJQ0VTEgh3aWRnZXQtMA=="}],'
                '"RegisteredDevices":{"example.com/widget":["widget-0","widget-1"]}},"Checksum":4103123034}')

REAL_V1_35_4_NO_POD = ('{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"example.com/widget":["widget-0","widget-1"]}},'
                       '"Checksum":2246471288}')

def _fnv1a32(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _spew_ids(v: list[str] | None) -> str:
    return "<nil>" if v is None else "[" + " ".join(v) + "]"


def kubelet_checksum(data: dict) -> int:
    """kubelet's checksum.New(cp.Data) of a device checkpoint (V2, 1.20+): FNV-1a 32 of go-spew's %#v of
    checkpoint.checkpointData with k8s.io/utils dump.ForHash (map keys sorted: NUMA nodes as numbers), written out
    here from the algorithm, not from pinscope; it gives the Checksum of every real file above."""
    import base64

    entries = data["PodDeviceEntries"]
    rendered = []
    for e in entries or []:
        ids = e["DeviceIDs"]
        per_numa = "<nil>" if ids is None else "map[" + " ".join(
            f"{n}:{_spew_ids(ids[n])}" for n in sorted(ids, key=int)) + "]"
        resp = e["AllocResp"]
        resp = "<nil>" if resp is None else "[" + " ".join(str(b) for b in base64.b64decode(resp)) + "]"
        rendered.append(f"{{PodUID:(string){e['PodUID']} ContainerName:(string){e['ContainerName']} "
                        f"ResourceName:(string){e['ResourceName']} DeviceIDs:(checkpoint.DevicesPerNUMA){per_numa} "
                        f"AllocResp:([]uint8){resp}}}")
    reg = data["RegisteredDevices"]
    reg_text = "<nil>" if reg is None else "map[" + " ".join(f"{r}:{_spew_ids(reg[r])}" for r in sorted(reg)) + "]"
    return _fnv1a32(f"(checkpoint.checkpointData){{PodDeviceEntries:([]checkpoint.PodDevicesEntry)"
                    f"{'<nil>' if entries is None else '[' + ' '.join(rendered) + ']'} "
                    f"RegisteredDevices:(map[string][]string){reg_text}}}")


GPU_FAR = "GPU-9b341c59-f96b-ba85-c137-78c3652fea65"
GPU_NEAR = "GPU-77a702db-e37f-3a74-d46d-c5713f66058c"
ORPHAN_UID = "5d0c3f0e-9a41-4b7e-8f6a-0b1c2d3e4f50"


def gpu_node_spec(**kw):
    """A 2-socket GPU node (intel numbering: NUMA 0 = CPUs 0-3,8-11, NUMA 1 = 4-7,12-15): an inference pod pinned
    on NUMA 0 whose GPU sits on NUMA 1 (the plugin keyed it -1: only NVIDIA's procfs + sysfs place it), an aligned
    one, an SR-IOV DPDK pod with a VF on its own node and one the platform cannot place (numa_node -1), and an
    allocation of a pod no source knows (a pod deleted since kubelet last wrote its checkpoint)."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    base = dict(
        hostname="gpu-node", sockets=2, cores=4, threads=2, policy="static", reserved="0,8",
        topology_policy="best-effort",
        pods=[PodSpec("infer-far", "ml", uid="11111111-2222-4333-8444-555555555555",
                      containers=[CtrSpec("triton", cpus="1-2,9-10", devices=[("nvidia.com/gpu", GPU_FAR, -1)])]),
              PodSpec("infer-near", "ml", uid="66666666-7777-4888-9999-aaaaaaaaaaaa",
                      containers=[CtrSpec("triton", cpus="3,11", devices=[("nvidia.com/gpu", GPU_NEAR, 0)])]),
              PodSpec("dpdk-fwd", "net", uid="bbbbbbbb-cccc-4ddd-8eee-ffffffffffff",
                      containers=[CtrSpec("fwd", cpus="4-5,12-13", devices=[
                          ("intel.com/intel_sriov_netdevice", "0000:af:02.1", 1),
                          ("intel.com/intel_sriov_netdevice", "0000:3b:0a.2", -1)])])],
        pci_numa={"0000:af:00.0": 1, "0000:3b:00.0": 0, "0000:af:02.1": 1, "0000:3b:0a.2": -1},
        nvidia_gpus={GPU_FAR: "0000:af:00.0", GPU_NEAR: "0000:3b:00.0"},
        orphan_devices=[(ORPHAN_UID, "trainer", "nvidia.com/gpu", "GPU-0a1b2c3d-0000-1111-2222-333344445555", 0)],
    )
    base.update(kw)
    return NodeSpec(**base)

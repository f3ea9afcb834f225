"""Device-manager checkpoints as real nodes wrote them (kubelet_internal_checkpoint), verbatim, with their sources.

KIND_TEGRA: a kind node on an NVIDIA Jetson (kindest/node v1.37.0), `docker exec ... cat
/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint` in a public write-up "Appendix A. A local GPU
cluster with kind": one GPU, no NUMA affinity ("-1"), checksum 3660592824.
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

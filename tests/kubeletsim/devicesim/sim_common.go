// The release-independent half of the oracle's device manager constructor (see sim_v1.N.go); added to
// package devicemanager by go build -overlay.
package devicemanager

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"
)

// simFill registers spec's devices as their plugins' ListAndWatch would (allDevices, healthyDevices,
// unhealthyDevices, one endpoint per resource) and the allocations as readCheckpoint would (podDevices,
// allocatedDevices); activePods lists spec.Active, and the sources are ready.
func simFill(m *ManagerImpl, spec SimSpec) {
	for res, devs := range spec.Devices {
		bad := sets.New[string](spec.Unhealthy[res]...)
		m.allDevices[res] = DeviceInstances{}
		m.healthyDevices[res] = sets.New[string]()
		m.unhealthyDevices[res] = sets.New[string]()
		for id, nodes := range devs {
			d := &pluginapi.Device{ID: id, Health: pluginapi.Healthy}
			if nodes != nil {
				d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{}}
				for _, n := range nodes {
					d.Topology.Nodes = append(d.Topology.Nodes, &pluginapi.NUMANode{ID: n})
				}
			}
			if bad.Has(id) {
				d.Health = pluginapi.Unhealthy
				m.unhealthyDevices[res].Insert(id)
			} else {
				m.healthyDevices[res].Insert(id)
			}
			m.allDevices[res][id] = d
		}
		m.endpoints[res] = endpointInfo{e: simEndpoint{}, opts: &pluginapi.DevicePluginOptions{}}
	}
	for pod, ctrs := range spec.Allocated {
		for name, byRes := range ctrs {
			for res, ids := range byRes {
				per := checkpoint.NewDevicesPerNUMA()
				for _, id := range ids {
					d := m.allDevices[res][id]
					if d == nil || d.Topology == nil || len(d.Topology.Nodes) == 0 {
						per[nodeWithoutTopology] = append(per[nodeWithoutTopology], id)
						continue
					}
					for _, n := range d.Topology.Nodes {
						per[n.ID] = append(per[n.ID], id)
					}
				}
				m.podDevices.insert(pod, name, res, per, &pluginapi.ContainerAllocateResponse{})
			}
		}
	}
	m.allocatedDevices = m.podDevices.devices()
	active := append([]string(nil), spec.Active...)
	m.activePods = func() []*v1.Pod {
		pods := make([]*v1.Pod, 0, len(active))
		for _, uid := range active {
			pods = append(pods, &v1.Pod{})
			pods[len(pods)-1].UID = types.UID(uid)
		}
		return pods
	}
}

// SimDevices is the devices kubelet's device manager holds for a container's resource, sorted.
func (m *ManagerImpl) SimDevices(podUID, container, resource string) []string {
	out := sets.List(m.podDevices.containerDevices(podUID, container, resource))
	sort.Strings(out)
	return out
}

// pinscope's dump of kubelet's device manager hint tables (topology_hints_test.go's getCommonTestCases and
// getPodScopeTestCases, used by its TestGetTopologyHints and TestGetPodTopologyHints, machine NUMA nodes
// {0, 1}): built by tests/kubeletsim/tabledump.py into a copy of kubelet's package
// pkg/kubelet/cm/devicemanager (its own files, unchanged, through go's -overlay). Not part of kubelet;
// never run by pinscope's tests.

package devicemanager

import (
	"encoding/json"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

type pinscopeHint struct {
	Mask      []int `json:"mask"`
	Preferred bool  `json:"preferred"`
}

type pinscopeDevCase struct {
	Source      string                                    `json:"source"`
	Description string                                    `json:"description"`
	Scope       string                                    `json:"scope"`
	Pod         string                                    `json:"pod"`
	Init        []map[string]int64                        `json:"init_containers"`
	Containers  []map[string]int64                        `json:"containers"`
	Names       []string                                  `json:"container_names"`
	Devices     map[string]map[string][]int64             `json:"devices"` // nil nodes: no topology
	Allocated   map[string]map[string]map[string][]string `json:"allocated"`
	Expected    map[string]*[]pinscopeHint                `json:"expected"`
}

func pinscopeLimits(cs []v1.Container) []map[string]int64 {
	out := []map[string]int64{}
	for _, c := range cs {
		m := map[string]int64{}
		for r, q := range c.Resources.Limits {
			m[string(r)] = q.Value()
		}
		out = append(out, m)
	}
	return out
}

func pinscopeDevCases(source, scope string, tcases []topologyHintTestCase) []pinscopeDevCase {
	var out []pinscopeDevCase
	for _, tc := range tcases {
		c := pinscopeDevCase{Source: source, Description: tc.description, Scope: scope, Pod: string(tc.pod.UID),
			Init: pinscopeLimits(tc.pod.Spec.InitContainers), Containers: pinscopeLimits(tc.pod.Spec.Containers),
			Devices: map[string]map[string][]int64{}, Allocated: tc.allocatedDevices, Expected: map[string]*[]pinscopeHint{}}
		for _, ctr := range tc.pod.Spec.Containers {
			c.Names = append(c.Names, ctr.Name)
		}
		for r, devs := range tc.devices {
			c.Devices[r] = map[string][]int64{}
			for _, d := range devs {
				var nodes []int64
				if d.Topology != nil {
					nodes = []int64{}
					for _, n := range d.Topology.Nodes {
						nodes = append(nodes, n.ID)
					}
				}
				c.Devices[r][d.ID] = nodes
			}
		}
		for r, hs := range tc.expectedHints {
			if hs == nil {
				c.Expected[r] = nil
				continue
			}
			ps := []pinscopeHint{}
			for _, h := range hs {
				p := pinscopeHint{Preferred: h.Preferred}
				if h.NUMANodeAffinity != nil {
					p.Mask = h.NUMANodeAffinity.GetBits()
				}
				ps = append(ps, p)
			}
			c.Expected[r] = &ps
		}
		out = append(out, c)
	}
	return out
}

var _ = topologymanager.TopologyHint{}

func TestPinscopeDump(t *testing.T) {
	const src = "pkg/kubelet/cm/devicemanager/topology_hints_test.go "
	all := pinscopeDevCases(src+"getCommonTestCases via TestGetTopologyHints", "container", getCommonTestCases())
	all = append(all, pinscopeDevCases(src+"getCommonTestCases via TestGetPodTopologyHints", "pod", getCommonTestCases())...)
	all = append(all, pinscopeDevCases(src+"getPodScopeTestCases via TestGetPodTopologyHints", "pod", getPodScopeTestCases())...)
	b, err := json.Marshal(map[string]any{"device_hint_cases": all})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("PINSCOPE_DUMP"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

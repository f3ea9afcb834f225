// pinscope's dump of kubelet's CPU manager hint tables (topology_hints_test.go's returnMachineInfo and
// returnTestCases, used by its TestGetTopologyHints and TestGetPodTopologyHints): built by
// tests/kubeletsim/tabledump.py into a copy of kubelet's package pkg/kubelet/cm/cpumanager (its own files,
// unchanged, through go's -overlay). Not part of kubelet; never run by pinscope's tests.

package cpumanager

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

type pinscopeHint struct {
	Mask      []int `json:"mask"`
	Preferred bool  `json:"preferred"`
}

type pinscopeHintCase struct {
	Source        string                      `json:"source"`
	Description   string                      `json:"description"`
	Pod           string                      `json:"pod"`
	Container     string                      `json:"container"`
	Requests      string                      `json:"cpu_request"`
	Limits        string                      `json:"cpu_limit"`
	PodRequests   string                      `json:"pod_cpu_request"`
	PodLimits     string                      `json:"pod_cpu_limit"`
	PodLevel      bool                        `json:"pod_level_resources"`
	PodLevelMgrs  bool                        `json:"pod_level_resource_managers"`
	Assignments   map[string]map[string][]int `json:"assignments"`
	DefaultCPUSet []int                       `json:"default"`
	Expected      []pinscopeHint              `json:"expected"`
}

func pinscopeHints(hs []topologymanager.TopologyHint) []pinscopeHint {
	out := []pinscopeHint{}
	for _, h := range hs {
		p := pinscopeHint{Preferred: h.Preferred}
		if h.NUMANodeAffinity != nil {
			p.Mask = h.NUMANodeAffinity.GetBits()
		}
		out = append(out, p)
	}
	return out
}

// pinscopeBoolField: a field one release's testCase has and another's has not (false when absent).
func pinscopeBoolField(v any, name string) bool {
	f := reflect.ValueOf(v).FieldByName(name)
	return f.IsValid() && f.Bool()
}

func TestPinscopeDump(t *testing.T) {
	var cases []pinscopeHintCase
	for _, tc := range returnTestCases() {
		c := pinscopeHintCase{Source: "pkg/kubelet/cm/cpumanager/topology_hints_test.go returnTestCases (TestGetTopologyHints, TestGetPodTopologyHints)",
			Description: tc.name, Pod: string(tc.pod.UID), Container: tc.container.Name,
			Requests: tc.container.Resources.Requests.Cpu().String(), Limits: tc.container.Resources.Limits.Cpu().String(),
			PodLevel: tc.podLevelResourcesEnabled, PodLevelMgrs: pinscopeBoolField(tc, "podLevelResourceManagersEnabled"),
			Assignments: map[string]map[string][]int{}, DefaultCPUSet: tc.defaultCPUSet.List(), Expected: pinscopeHints(tc.expectedHints)}
		if tc.pod.Spec.Resources != nil {
			c.PodRequests, c.PodLimits = tc.pod.Spec.Resources.Requests.Cpu().String(), tc.pod.Spec.Resources.Limits.Cpu().String()
		}
		for p, ctrs := range tc.assignments {
			c.Assignments[p] = map[string][]int{}
			for name, cset := range ctrs {
				c.Assignments[p][name] = cset.List()
			}
		}
		cases = append(cases, c)
	}
	b, err := json.Marshal(map[string]any{"cpu_hint_machine": returnMachineInfo(), "cpu_hint_cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("PINSCOPE_DUMP"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

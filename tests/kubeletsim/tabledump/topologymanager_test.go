// pinscope's dump of kubelet's topology manager test tables: built by tests/kubeletsim/tabledump.py into a
// copy of kubelet's package pkg/kubelet/cm/topologymanager (its own files, unchanged, through go's -overlay),
// so the cases come from kubelet's own functions (commonPolicyMergeTestCases, mergeTestCases, ...) exactly as
// its TestPolicy*Merge tests compose them. Not part of kubelet; never run by pinscope's tests.

package topologymanager

import (
	"encoding/json"
	"os"
	"testing"
)

type pinscopeHint struct {
	Mask      []int `json:"mask"` // nil: no NUMA preference
	Preferred bool  `json:"preferred"`
}

type pinscopeMergeCase struct {
	Source      string                       `json:"source"`
	Description string                       `json:"description"`
	Policy      string                       `json:"policy"`
	Nodes       []int                        `json:"nodes"`
	Distances   map[int][]uint64             `json:"distances"`
	Closest     bool                         `json:"prefer_closest"`
	Providers   []map[string]*[]pinscopeHint `json:"providers"`
	Expected    pinscopeHint                 `json:"expected"`
}

func pinscopeHintOf(h TopologyHint) pinscopeHint {
	out := pinscopeHint{Preferred: h.Preferred}
	if h.NUMANodeAffinity != nil {
		out.Mask = h.NUMANodeAffinity.GetBits()
		if out.Mask == nil {
			out.Mask = []int{}
		}
	}
	return out
}

func pinscopeCases(test, policy string, info *NUMAInfo, closest bool, tcases []policyMergeTestCase) []pinscopeMergeCase {
	var out []pinscopeMergeCase
	for _, tc := range tcases {
		c := pinscopeMergeCase{Source: "pkg/kubelet/cm/topologymanager/policy_test.go via " + test, Description: tc.name,
			Policy: policy, Nodes: info.Nodes, Distances: map[int][]uint64{}, Closest: closest, Expected: pinscopeHintOf(tc.expected)}
		for n, row := range info.NUMADistances {
			c.Distances[n] = row
		}
		for _, hp := range tc.hp {
			th := hp.(*mockHintProvider).th
			if th == nil {
				c.Providers = append(c.Providers, nil)
				continue
			}
			m := map[string]*[]pinscopeHint{}
			for res, hints := range th {
				if hints == nil {
					m[res] = nil
					continue
				}
				hs := []pinscopeHint{}
				for _, h := range hints {
					hs = append(hs, pinscopeHintOf(h))
				}
				m[res] = &hs
			}
			c.Providers = append(c.Providers, m)
		}
		out = append(out, c)
	}
	return out
}

func TestPinscopeDump(t *testing.T) {
	var all []pinscopeMergeCase
	four, eight := commonNUMAInfoFourNodes(), commonNUMAInfoEightNodes()
	be := &bestEffortPolicy{numaInfo: four}
	all = append(all, pinscopeCases("TestPolicyBestEffortMerge", "best-effort", four, false,
		append(append(commonPolicyMergeTestCases(four.Nodes), be.mergeTestCases(four.Nodes)...), be.mergeTestCasesNoPolicies(four.Nodes)...))...)
	bec := &bestEffortPolicy{numaInfo: eight, opts: PolicyOptions{PreferClosestNUMA: true}}
	all = append(all, pinscopeCases("TestPolicyBestEffortMergeClosestNUMA", "best-effort", eight, true,
		append(append(commonPolicyMergeTestCases(eight.Nodes), bec.mergeTestCases(eight.Nodes)...), bec.mergeTestCasesClosestNUMA(eight.Nodes)...))...)
	re := &restrictedPolicy{bestEffortPolicy{numaInfo: four}}
	all = append(all, pinscopeCases("TestPolicyRestrictedMerge", "restricted", four, false,
		append(append(commonPolicyMergeTestCases(four.Nodes), re.mergeTestCases(four.Nodes)...), re.mergeTestCasesNoPolicies(four.Nodes)...))...)
	rec := &restrictedPolicy{bestEffortPolicy{numaInfo: eight, opts: PolicyOptions{PreferClosestNUMA: true}}}
	all = append(all, pinscopeCases("TestPolicyRestrictedMergeClosestNUMA", "restricted", eight, true,
		append(append(commonPolicyMergeTestCases(eight.Nodes), rec.mergeTestCases(eight.Nodes)...), rec.mergeTestCasesClosestNUMA(eight.Nodes)...))...)
	sn := singleNumaNodePolicy{numaInfo: four, opts: PolicyOptions{}}
	all = append(all, pinscopeCases("TestPolicySingleNumaNodeMerge", "single-numa-node", four, false,
		append(commonPolicyMergeTestCases(four.Nodes), sn.mergeTestCases(four.Nodes)...))...)
	b, err := json.Marshal(map[string]any{"merge_cases": all})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("PINSCOPE_DUMP"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

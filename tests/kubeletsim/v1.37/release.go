package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/cpuset"
	"pinscope/tests/kubeletsim/devicemanager"
)

const release = "1.37"

type provider struct {
	policy cpumanager.Policy
	st     state.State
}

func (p provider) GetTopologyHints(logger klog.Logger, pod *v1.Pod, c *v1.Container, op lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.policy.GetTopologyHints(logger, p.st, pod, c, op)
}

func (p provider) GetPodTopologyHints(logger klog.Logger, pod *v1.Pod, op lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.policy.GetPodTopologyHints(logger, p.st, pod, op)
}

func (p provider) AllocatePod(logger klog.Logger, pod *v1.Pod, op lifecycle.Operation) error {
	return p.policy.AllocatePod(logger, p.st, pod, op)
}

func (p provider) Allocate(ctx context.Context, pod *v1.Pod, c *v1.Container, op lifecycle.Operation) error {
	return p.policy.Allocate(klog.FromContext(ctx), p.st, pod, c, op)
}

// memProvider is the memory manager's Static policy on its state, as the manager calls it.
type memProvider struct {
	policy memorymanager.Policy
	st     memstate.State
}

func (p memProvider) GetTopologyHints(logger klog.Logger, pod *v1.Pod, c *v1.Container, op lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.policy.GetTopologyHints(logger, p.st, pod, c, op)
}

func (p memProvider) GetPodTopologyHints(logger klog.Logger, pod *v1.Pod, op lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.policy.GetPodTopologyHints(logger, p.st, pod, op)
}

func (p memProvider) AllocatePod(logger klog.Logger, pod *v1.Pod, op lifecycle.Operation) error {
	return p.policy.AllocatePod(logger, p.st, pod, op)
}

func (p memProvider) Allocate(ctx context.Context, pod *v1.Pod, c *v1.Container, op lifecycle.Operation) error {
	return p.policy.Allocate(ctx, p.st, pod, c, op)
}

// memMachine sets each NUMA node's memory and hugepages as the case gives them.
func memMachine(mi *cadvisorapi.MachineInfo, m *MemCase) error {
	for i := range mi.Topology {
		n := &mi.Topology[i]
		mn := m.Nodes[fmt.Sprint(n.Id)]
		n.Memory = mn.Memory
		var sizes []uint64
		for k := range mn.HugePages {
			var kb uint64
			if _, err := fmt.Sscan(k, &kb); err != nil {
				return err
			}
			sizes = append(sizes, kb)
		}
		sort.Slice(sizes, func(a, b int) bool { return sizes[a] < sizes[b] })
		for _, kb := range sizes {
			n.HugePages = append(n.HugePages, cadvisorapi.HugePagesInfo{PageSize: kb, NumPages: mn.HugePages[fmt.Sprint(kb)]})
		}
	}
	return nil
}

// memManager starts the memory manager's Static policy on the case's machine and state.
func memManager(logger klog.Logger, mi *cadvisorapi.MachineInfo, c Case, tm topologymanager.Store) (memProvider, *Result) {
	if err := memMachine(mi, c.Memory); err != nil {
		return memProvider{}, &Result{Error: &Error{Kind: "BadCase", Message: err.Error()}}
	}
	reserved := map[int]map[v1.ResourceName]uint64{}
	for n, rs := range c.Memory.Reserved {
		reserved[n] = map[v1.ResourceName]uint64{}
		for r, v := range rs {
			reserved[n][v1.ResourceName(r)] = v
		}
	}
	policy, err := memorymanager.NewPolicyStatic(logger, mi, reserved, tm)
	if err != nil {
		return memProvider{}, &Result{Error: &Error{Kind: "MemoryPolicyError", Message: err.Error()}}
	}
	st := memState(logger, c.Memory)
	if err := policy.Start(logger, st); err != nil {
		return memProvider{}, &Result{Error: &Error{Kind: "MemoryStateError", Message: err.Error()}}
	}
	return memProvider{policy, st}, nil
}

// removeInactive is the CPU and memory managers' removeStaleState for the case's inactive pods: their
// policies' RemoveContainer for each container of those pods, before the next pod's hints.
func removeInactive(logger klog.Logger, c Case, policy cpumanager.Policy, st state.State, mem *memProvider) error {
	for _, pod := range c.Inactive {
		var names []string
		for name := range c.Assignments[pod] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if err := policy.RemoveContainer(logger, st, pod, name); err != nil {
				return err
			}
		}
		if mem != nil {
			for name := range c.Memory.Assignments[pod] {
				mem.policy.RemoveContainer(logger, mem.st, pod, name)
			}
		}
	}
	return nil
}

func cadvisorMachine(c Case) *cadvisorapi.MachineInfo {
	nodes, ncpu, nsock := machine(c)
	mi := &cadvisorapi.MachineInfo{NumCores: ncpu, NumSockets: nsock}
	for _, n := range nodes {
		node := cadvisorapi.Node{Id: n.id, Distances: n.distances}
		for _, mc := range n.cores {
			core := cadvisorapi.Core{Id: mc.id, Threads: mc.threads, SocketID: mc.socket}
			if mc.uncore >= 0 {
				core.UncoreCaches = []cadvisorapi.Cache{{Id: mc.uncore, Level: 3, Type: "Unified"}}
			}
			node.Cores = append(node.Cores, core)
		}
		mi.Topology = append(mi.Topology, node)
	}
	return mi
}

func run(c Case) Result {
	logger := logr.Discard()
	ctx := klog.NewContext(context.Background(), logger)
	mi := cadvisorMachine(c)
	var topo *topology.CPUTopology
	var err error
	if c.Topology != nil {
		var ids []int
		topo, ids, err = direct(c)
		if err != nil {
			return Result{Error: &Error{Kind: "BadCase", Message: err.Error()}}
		}
		mi.Topology = nil
		for _, id := range ids {
			mi.Topology = append(mi.Topology, cadvisorapi.Node{Id: id, Distances: c.Distances[fmt.Sprint(id)]})
		}
	} else {
		topo, err = topology.Discover(logger, mi)
		if err != nil {
			return Result{Error: &Error{Kind: "TopologyError", Message: err.Error()}}
		}
	}
	tm, err := topologymanager.NewManager(logger, mi.Topology, c.TMPolicy, c.TMScope, c.TMOpts)
	if err != nil {
		return Result{Error: &Error{Kind: "TopologyManagerError", Message: err.Error()}}
	}
	reserved, err := cpuset.Parse(c.Reserved)
	if err != nil {
		return Result{Error: &Error{Kind: "BadCase", Message: err.Error()}}
	}
	policy, err := cpumanager.NewStaticPolicy(logger, topo, c.NumRes, reserved, tm, c.CPUOpts)
	if err != nil {
		return Result{Error: &Error{Kind: "PolicyError", Message: err.Error()}}
	}
	st := state.NewMemoryState(logger)
	if err := loadState(st, c, topo, policy); err != nil {
		return Result{Error: &Error{Kind: "BadCase", Message: err.Error()}}
	}
	if err := policy.Start(logger, st); err != nil {
		return Result{Error: &Error{Kind: "StateError", Message: err.Error()}}
	}
	// kubelet adds the device manager first (container_manager_linux.go), then the CPU and memory managers
	var dm *devicemanager.ManagerImpl
	if c.Devices != nil {
		dir, err := os.MkdirTemp("", "kubeletsim-devices-")
		if err != nil {
			return Result{Error: &Error{Kind: "BadCase", Message: err.Error()}}
		}
		defer os.RemoveAll(dir)
		dm, err = devicemanager.SimManager(logger, dir, mi.Topology, tm, devSpec(c))
		if err != nil {
			return Result{Error: &Error{Kind: "DeviceManagerError", Message: err.Error()}}
		}
		tm.AddHintProvider(logger, dm)
	}
	tm.AddHintProvider(logger, provider{policy, st})
	var mem *memProvider
	if c.Memory != nil {
		mp, bad := memManager(logger, mi, c, tm)
		if bad != nil {
			return *bad
		}
		tm.AddHintProvider(logger, mp)
		mem = &mp
	}
	if err := removeInactive(logger, c, policy, st, mem); err != nil {
		return Result{Error: &Error{Kind: "StateError", Message: err.Error()}}
	}
	pod := newPod(c.Containers, c.Memory, c.Devices)
	res := tm.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, Operation: lifecycle.AddOperation})
	r := result(res.Admit, res.Reason, res.Message, st, pod, mem)
	if dm != nil && r.Error == nil {
		r.Devices = devicesOf(dm, c, string(pod.UID))
	}
	return r
}

func loadState(st state.State, c Case, topo *topology.CPUTopology, policy cpumanager.Policy) error {
	assigned := cpuset.New()
	as := state.ContainerCPUAssignments{}
	for pod, ctrs := range c.Assignments {
		as[pod] = map[string]cpuset.CPUSet{}
		for name, s := range ctrs {
			set, err := cpuset.Parse(s)
			if err != nil {
				return err
			}
			as[pod][name] = set
			assigned = assigned.Union(set)
		}
	}
	var def cpuset.CPUSet
	if c.Default != nil {
		d, err := cpuset.Parse(*c.Default)
		if err != nil {
			return err
		}
		def = d
	} else if len(as) > 0 {
		def = topo.CPUDetails.CPUs().Difference(assigned)
		if c.CPUOpts["strict-cpu-reservation"] == "true" {
			reserved := topo.CPUDetails.CPUs().Difference(policy.GetAllocatableCPUs(st))
			def = def.Difference(reserved)
		}
	}
	st.SetCPUAssignments(as)
	st.SetDefaultCPUSet(def)
	return nil
}

func newPod(containers []int, m *MemCase, d *DevCase) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "next", Namespace: "default", UID: types.UID("next-pod")}}
	for i, n := range containers {
		q := *resource.NewQuantity(int64(n), resource.DecimalSI)
		rl := v1.ResourceList{v1.ResourceCPU: q, v1.ResourceMemory: resource.MustParse("1Gi")}
		if m != nil && i < len(m.Containers) {
			delete(rl, v1.ResourceMemory)
			for r, v := range m.Containers[i] {
				rl[v1.ResourceName(r)] = *resource.NewQuantity(v, resource.BinarySI)
			}
		}
		if d != nil && i < len(d.Containers) {
			for r, v := range d.Containers[i] {
				rl[v1.ResourceName(r)] = *resource.NewQuantity(v, resource.DecimalSI)
			}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: containerName(i), Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}})
	}
	return pod
}

func result(admit bool, reason, message string, st state.State, pod *v1.Pod, mem *memProvider) Result {
	if !admit {
		return Result{Error: &Error{Kind: reason, Message: message}}
	}
	var out []string
	for _, c := range pod.Spec.Containers {
		set, ok := st.GetCPUSet(string(pod.UID), c.Name)
		if !ok {
			out = append(out, "")
			continue
		}
		out = append(out, set.String())
	}
	r := Result{CPUs: out}
	if mem != nil {
		var names []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		r.Memory = memNUMA(mem.st, string(pod.UID), names)
	}
	return r
}

package main

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/cpuset"
)

const release = "1.35"

type provider struct {
	policy cpumanager.Policy
	st     state.State
}

func (p provider) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.TopologyHint {
	return p.policy.GetTopologyHints(logr.Discard(), p.st, pod, c)
}

func (p provider) GetPodTopologyHints(pod *v1.Pod) map[string][]topologymanager.TopologyHint {
	return p.policy.GetPodTopologyHints(logr.Discard(), p.st, pod)
}

func (p provider) Allocate(pod *v1.Pod, c *v1.Container) error {
	return p.policy.Allocate(logr.Discard(), p.st, pod, c)
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
	tm, err := topologymanager.NewManager(mi.Topology, c.TMPolicy, c.TMScope, c.TMOpts)
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
	tm.AddHintProvider(logger, provider{policy, st})
	pod := newPod(c.Containers)
	_ = ctx
	res := tm.Admit(&lifecycle.PodAdmitAttributes{Pod: pod})
	return result(res.Admit, res.Reason, res.Message, st, pod)
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

func newPod(containers []int) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "next", Namespace: "default", UID: types.UID("next-pod")}}
	for i, n := range containers {
		q := *resource.NewQuantity(int64(n), resource.DecimalSI)
		rl := v1.ResourceList{v1.ResourceCPU: q, v1.ResourceMemory: resource.MustParse("1Gi")}
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: containerName(i), Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}})
	}
	return pod
}

func result(admit bool, reason, message string, st state.State, pod *v1.Pod) Result {
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
	return Result{CPUs: out}
}

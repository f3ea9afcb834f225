// Command kubeletsim is pinscope's oracle: it runs kubelet's own CPU manager
// (static policy) and topology manager code on cases read as JSON lines on
// stdin and prints, one JSON line per case on stdout, what kubelet decides.
//
// Each directory v1.N/ is its own Go module pinning one kubelet release
// (k8s.io/kubernetes v1.N.M and every k8s.io/* staging module at v0.N.M);
// this file is linked into each, and v1.N/release.go holds the glue for that
// release's signatures. Nothing here re-implements kubelet: the decision is
// made by topology.Discover, NewStaticPolicy, the in-memory state, and the
// topology manager's NewManager / Admit with the static policy as its hint
// provider; a case with "memory" adds the memory manager's Static policy
// (NewPolicyStatic on the case's machine, its in-memory state set to the
// case's machineState and entries, then Start) as the second hint provider,
// after the CPU manager, as kubelet adds them; a case with "devices" adds the
// device manager (kubelet's own ManagerImpl, built by newManagerImpl and filled
// with the case's devices by the files go build -overlay adds to its package,
// devicesim/; the package is kubelet's own files, linked unchanged from the module
// cache by build.py) as the first hint provider, as kubelet adds it. Build:
// tests/kubeletsim/build.py (cached outside the checkout).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"pinscope/tests/kubeletsim/devicemanager"
)

// Case is one question put to kubelet.
type Case struct {
	// CPUs online, each [id, socket, numa, core, uncore]; core is the physical
	// core's key (sysfs core_id), uncore < 0 means no uncore cache known.
	CPUs [][5]int `json:"cpus"`
	// NUMA nodes without CPUs (cadvisor lists them in its topology).
	CPUlessNUMA []int               `json:"cpuless_numa,omitempty"`
	Distances   map[string][]uint64 `json:"distances,omitempty"`
	CPUOpts     map[string]string   `json:"cpu_options,omitempty"`
	TMPolicy    string              `json:"tm_policy"`
	TMScope     string              `json:"tm_scope"`
	TMOpts      map[string]string   `json:"tm_options,omitempty"`
	Reserved    string              `json:"reserved"`
	NumRes      int                 `json:"num_reserved"`
	// Assignments podUID -> container -> cpuset; Default the shared pool
	// (nil: all online CPUs minus the assigned, minus reserved with strict).
	Assignments map[string]map[string]string `json:"assignments,omitempty"`
	Default     *string                      `json:"default,omitempty"`
	// Containers of the next (Guaranteed) pod: CPUs each.
	Containers []int `json:"containers"`
	// Topology, when given, is kubelet's CPUTopology as its tests write it (counts as given,
	// CPUDetails cpu -> [numa, socket, core, uncore]); cpus is then ignored and Discover not run.
	Topology *TopoSpec `json:"topology,omitempty"`
	// Memory, when given, turns on the memory manager's Static policy.
	Memory *MemCase `json:"memory,omitempty"`
	// Inactive: pods kubelet no longer counts active; each manager's removeStaleState removes their
	// containers (the policies' RemoveContainer) before the next pod's hints.
	Inactive []string `json:"inactive,omitempty"`
	// Devices, when given, turns on the device manager.
	Devices *DevCase `json:"devices,omitempty"`
}

// DevCase is the device manager's side of a case.
type DevCase struct {
	// Resources: resource -> device id -> its NUMA nodes (null: the plugin gave no topology).
	Resources map[string]map[string][]int64 `json:"resources"`
	// Unhealthy: resource -> its unhealthy devices' ids.
	Unhealthy map[string][]string `json:"unhealthy,omitempty"`
	// Allocated: pod -> container -> resource -> device ids, as the device checkpoint holds them.
	Allocated map[string]map[string]map[string][]string `json:"allocated,omitempty"`
	// Containers: the next pod's device requests (= limits) per container, resource -> count.
	Containers []map[string]int64 `json:"containers"`
}

// devSpec is the case's devices for devicemanager.SimManager: every pod of the checkpoint but the
// case's inactive ones is active, and so is the next pod (kubelet adds it to its pod manager before
// admitting it).
func devSpec(c Case) devicemanager.SimSpec {
	gone := map[string]bool{}
	for _, p := range c.Inactive {
		gone[p] = true
	}
	active := []string{"next-pod"}
	for p := range c.Devices.Allocated {
		if !gone[p] {
			active = append(active, p)
		}
	}
	return devicemanager.SimSpec{Devices: c.Devices.Resources, Unhealthy: c.Devices.Unhealthy,
		Allocated: c.Devices.Allocated, Active: active}
}

// devicesOf is, per container of the admitted pod, the devices kubelet's device manager gave it.
func devicesOf(dm *devicemanager.ManagerImpl, c Case, podUID string) []map[string][]string {
	out := []map[string][]string{}
	for i := range c.Containers {
		got := map[string][]string{}
		if i < len(c.Devices.Containers) {
			for res := range c.Devices.Containers[i] {
				got[res] = dm.SimDevices(podUID, containerName(i), res)
			}
		}
		out = append(out, got)
	}
	return out
}

// MemCase is the memory manager's side of a case.
type MemCase struct {
	// Nodes: per NUMA node (every node of the machine) its memory in bytes and its
	// hugepages (page size in KiB -> number of pages), as cadvisor reports them.
	Nodes map[string]MemNode `json:"nodes"`
	// Reserved: kubelet's reservedMemory, NUMA node -> resource -> bytes.
	Reserved map[int]map[string]uint64 `json:"reserved"`
	// MachineState and Assignments as memory_manager_state holds them (machineState, entries).
	MachineState memstate.NUMANodeMap                `json:"machine_state"`
	Assignments  memstate.ContainerMemoryAssignments `json:"assignments,omitempty"`
	// Containers: the next pod's requests (= limits) per container, resource -> bytes.
	Containers []map[string]int64 `json:"containers"`
}

// MemNode is one NUMA node's memory as cadvisor reports it.
type MemNode struct {
	Memory    uint64            `json:"memory"`
	HugePages map[string]uint64 `json:"hugepages,omitempty"`
}

// memState is the memory manager's in-memory state holding the case's checkpoint.
func memState(logger klog.Logger, m *MemCase) memstate.State {
	st := memstate.NewMemoryState(logger)
	st.SetMachineState(m.MachineState)
	if m.Assignments != nil {
		st.SetMemoryAssignments(m.Assignments)
	}
	return st
}

// memNUMA is the NUMA nodes of each container's memory blocks (nil: no blocks).
func memNUMA(st memstate.State, podUID string, names []string) [][]int {
	out := make([][]int, 0, len(names))
	for _, name := range names {
		blocks := st.GetMemoryBlocks(podUID, name)
		if blocks == nil {
			out = append(out, nil)
			continue
		}
		seen := map[int]bool{}
		nodes := []int{}
		for _, b := range blocks {
			for _, n := range b.NUMAAffinity {
				if !seen[n] {
					seen[n] = true
					nodes = append(nodes, n)
				}
			}
		}
		sort.Ints(nodes)
		out = append(out, nodes)
	}
	return out
}

// TopoSpec is a topology.CPUTopology literal.
type TopoSpec struct {
	NumCPUs        int               `json:"num_cpus"`
	NumCores       int               `json:"num_cores"`
	NumUncoreCache int               `json:"num_uncore_cache"`
	NumSockets     int               `json:"num_sockets"`
	NumNUMANodes   int               `json:"num_numa_nodes"`
	Details        map[string][4]int `json:"cpu_details"`
}

// direct builds the CPUTopology a TopoSpec writes, and the NUMA node ids cadvisor would list.
func direct(c Case) (*topology.CPUTopology, []int, error) {
	t := c.Topology
	details := topology.CPUDetails{}
	numas := map[int]bool{}
	for k, v := range t.Details {
		var cpu int
		if _, err := fmt.Sscan(k, &cpu); err != nil {
			return nil, nil, err
		}
		details[cpu] = topology.CPUInfo{NUMANodeID: v[0], SocketID: v[1], CoreID: v[2], UncoreCacheID: v[3]}
		numas[v[0]] = true
	}
	for _, id := range c.CPUlessNUMA {
		numas[id] = true
	}
	var ids []int
	for id := range numas {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return &topology.CPUTopology{NumCPUs: t.NumCPUs, NumCores: t.NumCores, NumUncoreCache: t.NumUncoreCache,
		NumSockets: t.NumSockets, NumNUMANodes: t.NumNUMANodes, CPUDetails: details}, ids, nil
}

// Error is kubelet's admission reason and message.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Result is what kubelet decided.
type Result struct {
	CPUs    []string `json:"cpus"`
	Error   *Error   `json:"error"`
	Release string   `json:"release"`
	// Memory: per container the NUMA nodes its memory blocks come from (memory cases, admitted).
	Memory [][]int `json:"memory,omitempty"`
	// Devices: per container, resource -> the device ids kubelet's device manager gave it (device cases, admitted).
	Devices []map[string][]string `json:"devices,omitempty"`
}

func main() {
	timeout := flag.Duration("timeout", 5*time.Second, "a case that runs longer is reported as kind Hang and the program exits")
	flag.Parse()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("v", "0")
	klog.SetOutput(io.Discard)
	// Every option of the CPU manager, alpha ones included, is exercised.
	_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"CPUManagerPolicyAlphaOptions": true})

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		line := in.Bytes()
		if len(line) == 0 {
			continue
		}
		var c Case
		if err := json.Unmarshal(line, &c); err != nil {
			_ = enc.Encode(Result{Error: &Error{Kind: "BadCase", Message: err.Error()}, Release: release})
			_ = out.Flush()
			continue
		}
		done := make(chan Result, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- Result{Error: &Error{Kind: "Panic", Message: fmt.Sprint(r)}}
				}
			}()
			done <- run(c)
		}()
		select {
		case r := <-done:
			r.Release = release
			_ = enc.Encode(r)
			_ = out.Flush()
		case <-time.After(*timeout):
			// kubelet's code did not return: a hang (the goroutine spins on).
			_ = enc.Encode(Result{Error: &Error{Kind: "Hang", Message: "kubelet's code did not return within " + timeout.String()}, Release: release})
			_ = out.Flush()
			os.Exit(0)
		}
	}
}

type coreKey struct{ numa, socket, core int }

// machine groups the case's CPUs as cadvisor reports them: NUMA nodes holding
// cores holding threads.
type machineCore struct {
	id, socket, uncore int
	threads            []int
}

type machineNode struct {
	id        int
	cores     []machineCore
	distances []uint64
}

func machine(c Case) ([]machineNode, int, int) {
	cores := map[coreKey]*machineCore{}
	var keys []coreKey
	sockets := map[int]bool{}
	for _, cpu := range c.CPUs {
		k := coreKey{cpu[2], cpu[1], cpu[3]}
		mc, ok := cores[k]
		if !ok {
			mc = &machineCore{id: cpu[3], socket: cpu[1], uncore: cpu[4]}
			cores[k] = mc
			keys = append(keys, k)
		}
		mc.threads = append(mc.threads, cpu[0])
		sockets[cpu[1]] = true
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.numa != b.numa {
			return a.numa < b.numa
		}
		if a.socket != b.socket {
			return a.socket < b.socket
		}
		return a.core < b.core
	})
	var nodes []machineNode
	for _, k := range keys {
		if len(nodes) == 0 || nodes[len(nodes)-1].id != k.numa {
			nodes = append(nodes, machineNode{id: k.numa, distances: c.Distances[fmt.Sprint(k.numa)]})
		}
		n := &nodes[len(nodes)-1]
		n.cores = append(n.cores, *cores[k])
	}
	for _, id := range c.CPUlessNUMA {
		nodes = append(nodes, machineNode{id: id, distances: c.Distances[fmt.Sprint(id)]})
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].id < nodes[j].id })
	return nodes, len(c.CPUs), len(sockets)
}

func containerName(i int) string { return fmt.Sprintf("c%d", i) }

// Package devicemanager gains this one file when pinscope's oracle is built (go build -overlay, see
// tests/kubeletsim/build.py): a constructor that builds kubelet's own ManagerImpl (newManagerImpl) holding a
// case's devices, their health and the devices allocated to pods, so the oracle asks kubelet's own
// GetTopologyHints / GetPodTopologyHints / Allocate (devicesToAllocate, filterByAffinity). Nothing of the
// device manager's decisions is written here. This copy is kubelet 1.37's (its endpoint has socketPath).
package devicemanager

import (
	"context"
	"path/filepath"
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// SimSpec is a case's devices.
type SimSpec struct {
	// Devices: resource -> device id -> its NUMA nodes (nil: no Topology; empty: a Topology without nodes).
	Devices map[string]map[string][]int64
	// Unhealthy: resource -> ids of its devices that are unhealthy.
	Unhealthy map[string][]string
	// Allocated: pod -> container -> resource -> device ids (the device checkpoint's PodDeviceEntries).
	Allocated map[string]map[string]map[string][]string
	// Active: the pods kubelet counts active (UpdateAllocatedDevices frees the others' devices).
	Active []string
}

// simEndpoint is a device plugin whose Allocate answers with an empty response and that offers no
// GetPreferredAllocation (the plugin's options say so).
type simEndpoint struct{}

func (simEndpoint) getPreferredAllocation(context.Context, []string, []string, int) (*pluginapi.PreferredAllocationResponse, error) {
	return nil, nil
}

func (simEndpoint) allocate(context.Context, []string) (*pluginapi.AllocateResponse, error) {
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{}}}, nil
}

func (simEndpoint) preStartContainer(context.Context, []string) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (simEndpoint) setStopTime(time.Time)        {}
func (simEndpoint) isStopped() bool              { return false }
func (simEndpoint) stopGracePeriodExpired() bool { return false }
func (simEndpoint) socketPath() string           { return "" }

// SimManager is kubelet's device manager (newManagerImpl, its checkpoint in dir) holding spec.
func SimManager(logger klog.Logger, dir string, topology []cadvisorapi.Node, store topologymanager.Store, spec SimSpec) (*ManagerImpl, error) {
	m, err := newManagerImpl(logger, filepath.Join(dir, "kubelet.sock"), topology, store)
	if err != nil {
		return nil, err
	}
	simFill(m, spec)
	return m, nil
}

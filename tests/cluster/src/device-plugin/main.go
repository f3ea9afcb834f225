// Command widget-device-plugin is a device plugin for pinscope's test cluster, written to kubelet's device
// plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1, at the control plane's release): it offers
// -count devices of -resource (example.com/widget: widget-0, widget-1), each on NUMA node -numa (a topology
// hint kubelet's topology manager uses and its device checkpoint keys the device by), and answers Allocate
// with an environment variable naming the devices given. It serves on a socket in kubelet's device plugin
// directory and registers with kubelet there; when kubelet restarts (a new kubelet.sock) or its directory is
// emptied (another release's kubelet, a fresh root-dir), it serves again and registers again.
//
// The sample device plugin of k8s.io/kubernetes (test/images/sample-device-plugin) cannot say where a device
// sits (its devices have no topology), and it pulls in k8s.io/kubernetes itself: this one needs the API only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource string
	devices  []*pluginapi.Device
	env      string
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once, all healthy, and keeps the stream open until kubelet or we end it.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	known := map[string]bool{}
	for _, d := range p.devices {
		known[d.ID] = true
	}
	out := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIds {
			if !known[id] {
				return nil, fmt.Errorf("no device %q", id)
			}
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{p.env: strings.Join(c.DevicesIds, ",")},
		})
	}
	log.Printf("allocate: %v", req.ContainerRequests)
	return out, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// identity of a file: its device and inode (a restarted kubelet makes a new kubelet.sock)
func identity(path string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, false
	}
	return uint64(st.Dev)<<32 ^ st.Ino, true
}

// serve starts the gRPC server on the plugin's socket (a stale one removed first).
func (p *plugin) serve(sock string) (*grpc.Server, error) {
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// register tells kubelet, on its registration socket, where the plugin serves and what.
func (p *plugin) register(kubeletSock, endpoint string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: p.resource,
		Options: &pluginapi.DevicePluginOptions{},
	})
	return err
}

func main() {
	dir := flag.String("dir", pluginapi.DevicePluginPath, "kubelet's device plugin directory")
	resource := flag.String("resource", "example.com/widget", "the extended resource the devices are")
	count := flag.Int("count", 2, "how many devices")
	numa := flag.Int64("numa", 0, "the NUMA node every device sits on (-1: none said)")
	prefix := flag.String("prefix", "widget-", "device ids: this prefix and 0, 1, ...")
	endpoint := flag.String("socket", "pinscope-widget.sock", "the plugin's socket, in -dir")
	env := flag.String("env", "WIDGET_DEVICES", "the variable Allocate sets in the container: the devices' ids")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.LUTC)

	p := &plugin{resource: *resource, env: *env}
	for i := 0; i < *count; i++ {
		d := &pluginapi.Device{ID: fmt.Sprintf("%s%d", *prefix, i), Health: pluginapi.Healthy}
		if *numa >= 0 {
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: *numa}}}
		}
		p.devices = append(p.devices, d)
	}
	kubeletSock := filepath.Join(*dir, "kubelet.sock")
	sock := filepath.Join(*dir, *endpoint)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var srv *grpc.Server
	var registered uint64 // the kubelet.sock registered with (0: none)
	stop := func() {
		if srv != nil {
			srv.Stop()
			srv = nil
		}
		registered = 0
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		kid, up := identity(kubeletSock)
		_, served := identity(sock)
		if up && (kid != registered || !served) {
			stop()
			var err error
			if srv, err = p.serve(sock); err != nil {
				log.Printf("serve on %s: %v", sock, err)
			} else if err = p.register(kubeletSock, *endpoint); err != nil {
				log.Printf("register with %s: %v", kubeletSock, err)
				stop()
			} else {
				registered = kid
				log.Printf("registered %s (%d devices on NUMA node %d) at %s", *resource, *count, *numa, sock)
			}
		}
		select {
		case s := <-sigs:
			log.Printf("%v: stopping", s)
			stop()
			_ = os.Remove(sock)
			return
		case <-tick.C:
		}
	}
}

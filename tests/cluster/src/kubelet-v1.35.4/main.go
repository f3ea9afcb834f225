// Command kubelet is the pinned Kubernetes v1.35.4 kubelet for pinscope's test cluster: the newest 1.35,
// from before the CPU manager checkpoint's v3/v4 shapes. It calls the release's own constructor, as the
// release's cmd/kubelet/kubelet.go does.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as the release's main
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}

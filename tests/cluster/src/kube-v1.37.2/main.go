// Command kube is the pinned Kubernetes v1.37.2 control plane and node for pinscope's test cluster, in one
// binary (one link instead of five: the machine has two cores). It runs as the program its name says
// (tests/cluster/build makes the links): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kubectl. Each calls the release's own command constructor, as the release's cmd/*/main.go does.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // for timeZone support in CronJob, as cmd/kube-apiserver imports it

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as the release's mains
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kube" && len(os.Args) > 1 {
		name, os.Args = os.Args[1], os.Args[1:]
	}
	var command *cobra.Command
	switch name {
	case "etcd":
		etcdmain.Main(os.Args)
		return
	case "kubectl":
		// as cmd/kubectl/kubectl.go: verbosity first, so that building the command can log
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	case "kube-apiserver":
		command = apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		command = controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		command = scheduler.NewSchedulerCommand()
	case "kubelet":
		command = kubelet.NewKubeletCommand(context.Background())
	default:
		fmt.Fprintf(os.Stderr, "kube: run as etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet or kubectl, not %q\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(command))
}

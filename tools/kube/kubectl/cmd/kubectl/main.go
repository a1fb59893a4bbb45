// Command kubectl is Kubernetes' client, built from the k8s.io/kubectl
// module at the version of the control plane the tests run, for the
// benchmarks that compare gpulab with it (bench/kube_test.go). See
// tools/kube/build.sh --kubectl.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // as kubectl's own main
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}

// Command etcd is etcd's own server main, built from the module proxy so the
// control-plane tests need no release download. See tools/kube/build.sh.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

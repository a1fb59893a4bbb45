package cluster

import (
	"io"
	"sync"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// klogTo is where klog's lines go now (nil: nowhere), under klogMu,
// which also serialises the writes.
var (
	klogMu      sync.Mutex
	klogTo      io.Writer
	klogInstall sync.Once
)

// RouteKlog sends everything client-go logs through klog (informers'
// watch errors, throttling notices, runtime.HandleError) to w, one line
// each, or nowhere when w is nil, and never to the terminal: the
// workbench owns the terminal, and a line written into it would tear
// the screen. It is for the whole process, and may be called at any
// time: klog's logger is installed once (klog.SetLoggerWithOptions is not
// safe beside a running client, whose requests read it: a race a busy
// test run caught), and later calls change only where its lines go.
func RouteKlog(w io.Writer) {
	klogInstall.Do(func() {
		logger := funcr.New(func(prefix, args string) {
			klogMu.Lock()
			defer klogMu.Unlock()
			if klogTo == nil {
				return
			}
			if prefix != "" {
				args = prefix + ": " + args
			}
			_, _ = io.WriteString(klogTo, args+"\n")
		}, funcr.Options{Verbosity: 2})
		klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
		// What would still bypass the logger (klog's own file output).
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	})
	klogMu.Lock()
	klogTo = w
	klogMu.Unlock()
}

package cluster

import (
	"io"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// klogMu serialises RouteKlog's writes to its writer.
var klogMu sync.Mutex

// RouteKlog sends everything client-go logs through klog (informers'
// watch errors, throttling notices, runtime.HandleError) to w, one line
// each, or nowhere when w is nil, and never to the terminal: the
// workbench owns the terminal, and a line written into it would tear
// the screen. Call it before the first client is made; it is for the
// whole process.
func RouteKlog(w io.Writer) {
	logger := logr.Discard()
	if w != nil {
		logger = funcr.New(func(prefix, args string) {
			klogMu.Lock()
			defer klogMu.Unlock()
			if prefix != "" {
				args = prefix + ": " + args
			}
			_, _ = io.WriteString(w, args+"\n")
		}, funcr.Options{Verbosity: 2})
	}
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	// What would still bypass the logger (klog's own file output).
	klog.LogToStderr(false)
	if w == nil {
		w = io.Discard
	}
	klog.SetOutput(w)
}

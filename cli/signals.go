package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// stopSignals end a run as Ctrl-C does: SIGINT, SIGTERM, and SIGHUP, which
// an operator gets when the terminal, or the SSH link to it, goes away.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalOwners counts the commands handling the stop signals themselves
// (interruptibleCleanup, signalContext): while one does, CatchSignals
// leaves the signal to it.
var signalOwners atomic.Int32

// CatchSignals makes every stop signal that no command handles itself
// end gpulab with ExitInterrupted (130), as the commands that handle them
// exit: a command that only reads (gpulab cluster, parse from a pipe, the
// demo while it starts) has nothing to stop or clean up, and without this
// a SIGTERM would end it 143 and a SIGHUP 129. main calls it once, before
// Main.
func CatchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	go func() {
		for sig := range ch {
			if signalOwners.Load() > 0 {
				continue // the command in flight stops itself
			}
			fmt.Fprintf(os.Stderr, "gpulab: interrupted (%s)\n", sig)
			forceExit(ExitInterrupted)
		}
	}()
}

// signalContext is a context that the first stop signal ends, for a
// command that stops itself on it (the workbench, the demo, sim serve).
func signalContext() (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	signalOwners.Add(1) // after NotifyContext: no signal falls between the two
	return ctx, func() { stop(); signalOwners.Add(-1) }
}

// forcedExits are what must be undone even when gpulab exits at once (a
// second Ctrl-C): files that hold a key, above all.
var forcedExits struct {
	sync.Mutex
	next int
	fns  map[int]func()
}

// onForcedExit has fn run if gpulab exits at once on a signal before
// remove is called.
func onForcedExit(fn func()) (remove func()) {
	forcedExits.Lock()
	defer forcedExits.Unlock()
	if forcedExits.fns == nil {
		forcedExits.fns = map[int]func(){}
	}
	id := forcedExits.next
	forcedExits.next++
	forcedExits.fns[id] = fn
	return func() {
		forcedExits.Lock()
		defer forcedExits.Unlock()
		delete(forcedExits.fns, id)
	}
}

// forceExit runs what onForcedExit registered, then exits with code.
func forceExit(code int) {
	forcedExits.Lock()
	for _, fn := range forcedExits.fns {
		fn()
	}
	forcedExits.Unlock()
	os.Exit(code)
}

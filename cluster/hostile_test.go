package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/heapwatch"
)

// hostileRead reads the cluster at server with a bearer token, as a
// kubeconfig would have gpulab do, within a deadline of its own.
func hostileRead(t *testing.T, server string) error {
	t.Helper()
	c, err := cluster.NewClient(&rest.Config{Host: server, BearerToken: "operator-token-1f3c"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = cluster.Nodes(ctx, c)
	if ctx.Err() != nil {
		t.Fatalf("the read ran into its 2-minute deadline instead of stopping at a limit: %v", err)
	}
	return err
}

// An API server that redirects to another host gets no credentials sent
// there: the redirect is refused (client-go's own policy follows it, with
// the token).
func TestAPIServerRedirectElsewhereRefused(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)
	err := hostileRead(t, api.URL)
	if err == nil || !strings.Contains(err.Error(), "redirected to "+other.URL+", another host: refused (the client's credentials would go with it)") {
		t.Errorf("a redirect to another host: %v", err)
	}
	if tok := leaked.Load().(string); tok != "" {
		t.Errorf("the other host was sent the operator's credentials: %q", tok)
	}
}

// heapPeak samples the heap while f runs (internal/heapwatch) and returns
// its peak above what it held before.
func heapPeak(f func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := heapwatch.Start()
	f()
	peak := stop()
	return peak - min(peak, base.HeapInuse)
}

// A broken or hostile API server cannot exhaust gpulab's memory: a
// continue token that never ends stops at the object limit, one page that
// ignores limit and never ends stops at the response limit; each says
// which limit, and the heap stays bounded (the figures are logged).
func TestAPIServerAnswersAreBounded(t *testing.T) {
	node := func(i int) string {
		return fmt.Sprintf(`{"metadata":{"name":"n%d"},"status":{"capacity":{"nvidia.com/gpu":"8"},"allocatable":{"nvidia.com/gpu":"8"}}}`, i)
	}
	var page strings.Builder
	page.WriteString(`{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"more"},"items":[`)
	for i := range 500 {
		if i > 0 {
			page.WriteString(",")
		}
		page.WriteString(node(i))
	}
	page.WriteString("]}")
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, page.String())
	}))
	t.Cleanup(endless.Close)
	var err error
	peak := heapPeak(func() { err = hostileRead(t, endless.URL) })
	t.Logf("a continue token that never ends: stopped at %d objects, heap peak %d MiB", cluster.MaxListObjects, peak>>20)
	const bound = 1 << 30
	if peak > bound {
		t.Errorf("the heap grew %d MiB reading a list that never ends, over the 1 GiB bound", peak>>20)
	}
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("list nodes: more than %d objects, gpulab's limit for one list", cluster.MaxListObjects)) {
		t.Errorf("a list whose continue token never ends: %v", err)
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[`)
		chunk := strings.Repeat(node(0)+",", 1000)
		for sent := 0; sent < 2*cluster.MaxResponseBytes; sent += len(chunk) {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return // the client hung up: the limit held
			}
		}
		fmt.Fprint(w, node(1)+"]}")
	}))
	t.Cleanup(huge.Close)
	peak = heapPeak(func() { err = hostileRead(t, huge.URL) })
	t.Logf("one page that ignores limit: stopped at %d MiB, heap peak %d MiB", cluster.MaxResponseBytes>>20, peak>>20)
	if err == nil || !strings.Contains(err.Error(), "is larger than 128 MiB, gpulab's limit for one response: refused") {
		t.Errorf("one page that never ends: %v", err)
	}
	if peak > bound {
		t.Errorf("the heap grew %d MiB reading one page that never ends, over the 1 GiB bound", peak>>20)
	}
}

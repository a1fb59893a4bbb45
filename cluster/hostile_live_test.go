package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpulab/gpulab/cluster"
)

// fakeAPI is an API server of the kinds the Live view watches, each empty
// and quiet, but nodes, which a scenario serves: nodes(w, r, watchList)
// answers a list (watchList false) or a watch-list.
func fakeAPI(t *testing.T, nodes func(w http.ResponseWriter, r *http.Request, watchList bool) bool) string {
	t.Helper()
	kinds := map[string][2]string{ // path: kind, group version
		"/api/v1/nodes":          {"Node", "v1"},
		"/api/v1/pods":           {"Pod", "v1"},
		"/api/v1/resourcequotas": {"ResourceQuota", "v1"},
		"/api/v1/events":         {"Event", "v1"},
		"/apis/scheduling.k8s.io/v1/priorityclasses": {"PriorityClass", "scheduling.k8s.io/v1"},
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"35","gitVersion":"v1.35.0"}`)
			return
		}
		k, ok := kinds[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		watching := q.Get("watch") == "true"
		watchList := watching && q.Get("sendInitialEvents") == "true"
		w.Header().Set("Content-Type", "application/json")
		if k[0] == "Node" && (watchList || !watching) && nodes(w, r, watchList) {
			return
		}
		switch {
		case !watching:
			fmt.Fprintf(w, `{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"1"},"items":[]}`, k[0], k[1])
			return
		case watchList:
			fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", k[0], k[1])
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a watch with nothing to say
	}))
	t.Cleanup(api.Close)
	return api.URL
}

// liveWarning starts a Live view of server and waits for its status to
// warn with want, within a deadline of its own; it returns the heap's
// peak meanwhile.
func liveWarning(t *testing.T, server, want string) uint64 {
	t.Helper()
	c, err := cluster.NewClient(&rest.Config{Host: server})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var l *cluster.Live
	peak := heapPeak(func() {
		l = cluster.StartLive(ctx, c, cluster.LiveOptions{})
		deadline := time.After(2 * time.Minute)
		for !strings.Contains(l.Status().Warning, want) {
			select {
			case <-l.Changes():
			case <-deadline:
				t.Errorf("waited 2 minutes for the view to warn %q; its status: %s (warning %q)", want, l.Status(), l.Status().Warning)
				return
			}
		}
	})
	cancel()
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Errorf("the view did not stop within a minute of its context's end")
	}
	return peak
}

// The Live view (the Cluster tab) reads through informers, which list as
// a watch stream (client-go's watch-list) or in pages: a hostile API
// server is stopped at the bounds of one read there too, the view warns
// with the limit, and the heap stays bounded (the figures are logged).
func TestLiveViewAnswersAreBounded(t *testing.T) {
	const bound = 1 << 30
	// The object bound, lowered: the test is of where it is enforced,
	// and 200,000 objects through the race detector on a busy machine
	// took longer than the wait's deadline.
	const objects = 20_000
	defer cluster.LowerLiveListObjects(objects)()
	node := func(i int) string {
		return fmt.Sprintf(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n%d","resourceVersion":"%d"},"status":{"capacity":{"nvidia.com/gpu":"8"}}}`, i, i+2)
	}
	oneNode := func(w http.ResponseWriter) {
		fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"2"},"items":[%s]}`, node(0))
	}
	cases := []struct {
		name, want string
		nodes      func(w http.ResponseWriter, r *http.Request, watchList bool) bool
	}{{
		name: "initial events that never end",
		want: fmt.Sprintf("the initial events of a watch-list: more than %d objects, gpulab's limit for one list", objects),
		nodes: func(w http.ResponseWriter, r *http.Request, watchList bool) bool {
			if !watchList {
				oneNode(w)
				return true
			}
			for i := 0; r.Context().Err() == nil; i++ {
				if _, err := fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", node(i)); err != nil {
					break // the client hung up: the limit held
				}
			}
			return true
		},
	}, {
		name: "one event that never ends",
		want: "an event of the API server's watch of /api/v1/nodes is larger than 128 MiB, gpulab's limit for one response: refused",
		nodes: func(w http.ResponseWriter, r *http.Request, watchList bool) bool {
			if !watchList {
				oneNode(w)
				return true
			}
			fmt.Fprint(w, `{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"big","labels":{"a":"`)
			chunk := strings.Repeat("a", 1<<20)
			for sent := 0; sent < 2*cluster.MaxResponseBytes; sent += len(chunk) {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					break
				}
			}
			return true
		},
	}, {
		name: "pages that never end",
		want: fmt.Sprintf("more than %d objects, gpulab's limit for one list", objects),
		nodes: func(w http.ResponseWriter, r *http.Request, watchList bool) bool {
			if watchList { // an older server: the reflector lists
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`, http.StatusBadRequest)
				return true
			}
			var page strings.Builder
			page.WriteString(`{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"2","continue":"more"},"items":[`)
			for i := range 500 {
				if i > 0 {
					page.WriteString(",")
				}
				page.WriteString(node(i))
			}
			page.WriteString("]}")
			fmt.Fprint(w, page.String())
			return true
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			peak := liveWarning(t, fakeAPI(t, c.nodes), c.want)
			t.Logf("%s: the view warns %q; heap peak %d MiB", c.name, c.want, peak>>20)
			if peak > bound {
				t.Errorf("the heap grew %d MiB, over the 1 GiB bound", peak>>20)
			}
		})
	}
}

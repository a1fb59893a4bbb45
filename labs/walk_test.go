package labs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gpulab/gpulab/labs"
)

// A guided run asks about a step only once every host has finished the
// step before: gpu02's run step is slow, and the question about observe
// must come after gpu02's run line, not while it still runs. With a
// window of one host (the second host starts when the first is done) the
// walk does not wait for a host that cannot start, and still asks once
// per step. Prerequisite steps are named after what they check.
func TestGuidedRunWaitsForEveryHost(t *testing.T) {
	topo := "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: topo}, {topo: topo, work: "sleep 1"}})
	l := e2eLab(t)
	params, _ := l.Bind(nil)
	for _, window := range []int{0, 1} {
		e.Concurrency = window
		var mu sync.Mutex
		var lines, asked []string
		rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params,
			OnEvent: func(ev labs.Event) {
				if ev.Kind == labs.StepFinished {
					mu.Lock()
					lines = append(lines, ev.Host+" "+ev.Step.ID)
					mu.Unlock()
				}
			},
			Guide: func(_ context.Context, g labs.GuideStep) labs.GuideAnswer {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, g.Step.ID+" after "+strings.Join(lines, ","))
				return labs.GuideRun
			}})
		var want []string
		switch window {
		case 0: // both hosts at once: each question after both hosts' lines
			want = []string{
				"prepare after gpu01 nvidia-smi-lists-gpus,gpu02 nvidia-smi-lists-gpus",
				"work after gpu01 nvidia-smi-lists-gpus,gpu02 nvidia-smi-lists-gpus,gpu01 prepare,gpu02 prepare",
				"topo after gpu01 nvidia-smi-lists-gpus,gpu02 nvidia-smi-lists-gpus,gpu01 prepare,gpu02 prepare,gpu01 work,gpu02 work",
			}
		case 1: // one host at a time: gpu01 walks alone, gpu02 follows the answers
			want = []string{"prepare after gpu01 nvidia-smi-lists-gpus", "work after gpu01 nvidia-smi-lists-gpus,gpu01 prepare",
				"topo after gpu01 nvidia-smi-lists-gpus,gpu01 prepare,gpu01 work"}
		}
		if window == 0 {
			// The hosts' lines of one step may come in either order.
			for i := range asked {
				asked[i] = strings.Replace(asked[i], "gpu02 nvidia-smi-lists-gpus,gpu01 nvidia-smi-lists-gpus", "gpu01 nvidia-smi-lists-gpus,gpu02 nvidia-smi-lists-gpus", 1)
				asked[i] = strings.Replace(asked[i], "gpu02 prepare,gpu01 prepare", "gpu01 prepare,gpu02 prepare", 1)
			}
		}
		if fmt.Sprint(asked) != fmt.Sprint(want) {
			t.Errorf("window %d: asked\n%s\nwant\n%s", window, strings.Join(asked, "\n"), strings.Join(want, "\n"))
		}
		for _, h := range rec.Hosts {
			if !h.Passed || len(h.Steps) == 0 || h.Steps[0].ID != "nvidia-smi-lists-gpus" || h.Steps[0].Phase != "prerequisite" {
				t.Errorf("window %d: %s passed %v, steps %+v", window, h.Host, h.Passed, h.Steps)
			}
		}
	}
}

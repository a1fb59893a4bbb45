// Package fence is the operating loop's last step, the action: it fences
// a sick node (Kubernetes: cordon, a taint, annotations naming the fence
// record; Slurm: a drain whose reason gpulab owns) and releases only what
// it fenced.
//
// Every action is planned before it is applied: PlanFence and
// PlanRelease read each node and say, node by node, what would change,
// what is left as it is (another actor's cordon, taint or drain, and
// who set it) and what is refused; Apply carries out exactly the plan a
// person saw. A node that changed between the plan and the action is not
// touched: the result says what changed. Two gpulab processes fencing
// one node race on the node's resourceVersion: one wins, the other says
// who fenced it. A second fence or release changes nothing and says so.
//
// The evidence that made the decision is kept beside it, in a Record
// (record.json and record.md in its own directory, created exclusively),
// which the node's annotations (or the Slurm drain reason) name.
package fence

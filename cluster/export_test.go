package cluster

// LowerLiveListObjects lowers the informers' object bound for a test and
// returns what undoes it.
func LowerLiveListObjects(n int) (undo func()) {
	was := liveListObjects
	liveListObjects = n
	return func() { liveListObjects = was }
}

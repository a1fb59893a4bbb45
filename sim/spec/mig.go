package spec

import (
	"fmt"
	"sort"
)

// Profile is one MIG GPU instance profile of the A100-SXM4-40GB. The
// figures are those `nvidia-smi mig -lgip` prints for this GPU
// (testdata/fixtures/nvidia-smi-mig-lgip/a100-40gb-drv450-all-free.txt)
// and go-nvml's A100 mock agrees with; NVMLIndex is the profile's
// GPU_INSTANCE_PROFILE_* index in NVML, ID the id nvidia-smi shows.
type Profile struct {
	Name       string
	ID         int
	NVMLIndex  int
	CIIndex    int // COMPUTE_INSTANCE_PROFILE_* of a compute instance spanning it
	Slices     int // compute slices (of 7)
	MemSlices  int // memory slices (of 8): the placement size
	MemoryMiB  int
	SMs        int
	CE, DEC    int
	ENC, JPEG  int
	OFA        int
	Placements []int // valid placement starts
	Count      int   // instances the GPU can hold
}

// Profiles are the A100-SXM4-40GB's GPU instance profiles in the order
// `nvidia-smi mig -lgip` lists them.
var Profiles = []Profile{
	{Name: "1g.5gb", ID: 19, NVMLIndex: 0, CIIndex: 0, Slices: 1, MemSlices: 1, MemoryMiB: 4864, SMs: 14, CE: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Count: 7},
	{Name: "1g.5gb+me", ID: 20, NVMLIndex: 7, CIIndex: 0, Slices: 1, MemSlices: 1, MemoryMiB: 4864, SMs: 14, CE: 1, DEC: 1, JPEG: 1, OFA: 1, Placements: []int{0, 1, 2, 3, 4, 5, 6}, Count: 1},
	{Name: "1g.10gb", ID: 15, NVMLIndex: 9, CIIndex: 0, Slices: 1, MemSlices: 2, MemoryMiB: 9856, SMs: 14, CE: 1, DEC: 1, Placements: []int{0, 2, 4, 6}, Count: 4},
	{Name: "2g.10gb", ID: 14, NVMLIndex: 1, CIIndex: 1, Slices: 2, MemSlices: 2, MemoryMiB: 9856, SMs: 28, CE: 2, DEC: 1, Placements: []int{0, 2, 4}, Count: 3},
	{Name: "3g.20gb", ID: 9, NVMLIndex: 2, CIIndex: 2, Slices: 3, MemSlices: 4, MemoryMiB: 19968, SMs: 42, CE: 3, DEC: 2, Placements: []int{0, 4}, Count: 2},
	{Name: "4g.20gb", ID: 5, NVMLIndex: 3, CIIndex: 3, Slices: 4, MemSlices: 4, MemoryMiB: 19968, SMs: 56, CE: 4, DEC: 2, Placements: []int{0}, Count: 1},
	{Name: "7g.40gb", ID: 0, NVMLIndex: 4, CIIndex: 4, Slices: 7, MemSlices: 8, MemoryMiB: 40192, SMs: 98, CE: 7, DEC: 5, JPEG: 1, OFA: 1, Placements: []int{0}, Count: 1},
}

// ProfileByName finds a profile ("3g.20gb").
func ProfileByName(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// GPUInstance is a created MIG GPU instance, with one compute instance
// (id 0) spanning it.
type GPUInstance struct {
	ID      int
	Profile Profile
	Start   int // placement start (memory slice)
	Size    int // placement size
	// Device is the MIG device's index on its GPU (nvidia-smi -L's
	// "Device N"), in order of GPU instance id.
	Device int
}

// giPools are the GPU instance ids the driver hands out by profile size.
var giPools = map[int][]int{7: {0}, 4: {1, 2}, 3: {1, 2}, 2: {3, 4, 5, 6}, 1: {7, 8, 9, 10, 11, 12, 13, 14}}

// PlaceMIG places the profiles in the order given, each at the highest
// free placement its profile allows, with the lowest free GPU instance id
// of its size: creating two 3g.20gb gives ids 1 at 4:4 and 2 at 0:4, as
// recorded in testdata/fixtures/nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt.
// The result is sorted by id.
func PlaceMIG(profiles []string) ([]GPUInstance, error) {
	var used [8]bool
	usedIDs := map[int]bool{}
	count := map[string]int{}
	var out []GPUInstance
	for _, name := range profiles {
		p, ok := ProfileByName(name)
		if !ok {
			return nil, fmt.Errorf("no MIG profile %q on the A100-SXM4-40GB", name)
		}
		if count[name]++; count[name] > p.Count {
			return nil, fmt.Errorf("at most %d instance(s) of %s", p.Count, name)
		}
		start := -1
		for k := len(p.Placements) - 1; k >= 0 && start < 0; k-- {
			s := p.Placements[k]
			free := true
			for m := s; m < s+p.MemSlices; m++ {
				free = free && !used[m]
			}
			if free {
				start = s
			}
		}
		id := -1
		for _, c := range giPools[p.Slices] {
			if !usedIDs[c] {
				id = c
				break
			}
		}
		if start < 0 || id < 0 {
			return nil, fmt.Errorf("no room left for %s after %v", name, profiles[:len(out)])
		}
		for m := start; m < start+p.MemSlices; m++ {
			used[m] = true
		}
		usedIDs[id] = true
		out = append(out, GPUInstance{ID: id, Profile: p, Start: start, Size: p.MemSlices})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	for i := range out {
		out[i].Device = i
	}
	return out, nil
}

// String is "ID:PROFILE@START:SIZE" ("1:3g.20gb@4:4").
func (g GPUInstance) String() string {
	return fmt.Sprintf("%d:%s@%d:%d", g.ID, g.Profile.Name, g.Start, g.Size)
}

// MIGUsedMiB is an idle MIG device's framebuffer in use: 19 MiB for a
// 3g.20gb as recorded (testdata/fixtures/nvidia-smi-q-x/
// a100-sxm4-40gb-mig-enabled-drv510.xml.txt), in proportion to memory
// slices for the others.
func MIGUsedMiB(p Profile) int { return (19*p.MemSlices + 2) / 4 }

// MIGBAR1MiB is a MIG device's BAR1 share: the GPU's 64 GiB over 8
// memory slices, less one MiB (32767 MiB for a 3g.20gb, as recorded).
func MIGBAR1MiB(p Profile) int { return 65536*p.MemSlices/8 - 1 }

// MemoryUsedMiB is GPU gpu's framebuffer in use: the recorded idle 4 MiB,
// or with MIG its devices' use and one MiB more (the A30 recording,
// testdata/fixtures/nvidia-smi/a30-drv535-mig-3-devices-87col.txt, shows
// 25+12+12 MiB of devices as 50 MiB); plus what its processes use.
func (f Faults) MemoryUsedMiB(gpu int) int {
	gis := f.Instances(gpu)
	if gis == nil {
		return MemoryUsedMiB + f.processesMiB(gpu)
	}
	used := 1
	for _, g := range gis {
		used += MIGUsedMiB(g.Profile)
	}
	return used + f.processesMiB(gpu)
}

// MemoryFreeMiB is GPU gpu's free framebuffer.
func (f Faults) MemoryFreeMiB(gpu int) int {
	return MemoryFreeMiB - (f.MemoryUsedMiB(gpu) - MemoryUsedMiB)
}

package nvmlsim

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpulab/gpulab/sim/spec"
)

// mig answers NVML's MIG calls from f's layout for GPU i: profile ids as
// nvidia-smi shows them (9 for 3g.20gb, where go-nvml's mock would say 2),
// the placements and GPU instance ids spec.PlaceMIG gives, one compute
// instance spanning each GPU instance, and a MIG device per instance.
// Without a layout, MIG is disabled and no instance exists.
func mig(d *server.Device, i int, f Faults) {
	gis := f.Instances(i)
	on := f.MIGOn(i) && gis != nil
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		if on {
			return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
		}
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	var devices []nvml.Device
	instances := map[int][]nvml.GpuInstance{} // by NVML profile index
	for _, g := range gis {
		devices = append(devices, migDevice(spec.UUID(f.Machine, i), g))
		instances[g.Profile.NVMLIndex] = append(instances[g.Profile.NVMLIndex], gpuInstance(d, g))
	}
	d.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
		if j < 0 || j >= len(devices) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return devices[j], nvml.SUCCESS
	}
	d.GetGpuInstanceProfileInfoFunc = func(p int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
		for _, pr := range spec.Profiles {
			if pr.NVMLIndex == p {
				return profileInfo(pr), nvml.SUCCESS
			}
		}
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetGpuInstancesFunc = func(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstance, nvml.Return) {
		if !on {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		for _, pr := range spec.Profiles {
			if uint32(pr.ID) == info.Id {
				return instances[pr.NVMLIndex], nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
}

func profileInfo(p spec.Profile) nvml.GpuInstanceProfileInfo {
	return nvml.GpuInstanceProfileInfo{Id: uint32(p.ID), SliceCount: uint32(p.Slices), InstanceCount: uint32(p.Count),
		MultiprocessorCount: uint32(p.SMs), CopyEngineCount: uint32(p.CE), DecoderCount: uint32(p.DEC),
		EncoderCount: uint32(p.ENC), JpegCount: uint32(p.JPEG), OfaCount: uint32(p.OFA), MemorySizeMB: uint64(p.MemoryMiB)}
}

func migDevice(gpuUUID string, g spec.GPUInstance) nvml.Device {
	md := &mock.Device{}
	md.GetGpuInstanceIdFunc = func() (int, nvml.Return) { return g.ID, nvml.SUCCESS }
	md.GetComputeInstanceIdFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
	md.GetUUIDFunc = func() (string, nvml.Return) { return spec.MIGUUID(gpuUUID, g.ID, 0), nvml.SUCCESS }
	return md
}

func gpuInstance(d nvml.Device, g spec.GPUInstance) nvml.GpuInstance {
	gi := &mock.GpuInstance{}
	p := g.Profile
	gi.GetInfoFunc = func() (nvml.GpuInstanceInfo, nvml.Return) {
		return nvml.GpuInstanceInfo{Device: d, Id: uint32(g.ID), ProfileId: uint32(p.ID),
			Placement: nvml.GpuInstancePlacement{Start: uint32(g.Start), Size: uint32(g.Size)}}, nvml.SUCCESS
	}
	ciInfo := nvml.ComputeInstanceProfileInfo{Id: uint32(p.CIIndex), SliceCount: uint32(p.Slices), InstanceCount: 1,
		MultiprocessorCount: uint32(p.SMs), SharedCopyEngineCount: uint32(p.CE), SharedDecoderCount: uint32(p.DEC),
		SharedEncoderCount: uint32(p.ENC), SharedJpegCount: uint32(p.JPEG), SharedOfaCount: uint32(p.OFA)}
	gi.GetComputeInstanceProfileInfoFunc = func(cp, eng int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
		if cp != p.CIIndex || eng != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED {
			return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
		}
		return ciInfo, nvml.SUCCESS
	}
	ci := &mock.ComputeInstance{}
	ci.GetInfoFunc = func() (nvml.ComputeInstanceInfo, nvml.Return) {
		return nvml.ComputeInstanceInfo{Device: d, GpuInstance: gi, Id: 0, ProfileId: uint32(p.CIIndex),
			Placement: nvml.ComputeInstancePlacement{Start: 0, Size: uint32(p.Slices)}}, nvml.SUCCESS
	}
	gi.GetComputeInstancesFunc = func(info *nvml.ComputeInstanceProfileInfo) ([]nvml.ComputeInstance, nvml.Return) {
		if info.Id != uint32(p.CIIndex) {
			return nil, nvml.SUCCESS
		}
		return []nvml.ComputeInstance{ci}, nvml.SUCCESS
	}
	return gi
}

package nvmlsim

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpulab/gpulab/sim/spec"
)

// throttleBits are the clock-event reasons by spec.ThrottleReasons' names.
var throttleBits = map[string]uint64{
	"hw_slowdown": nvml.ClocksThrottleReasonHwSlowdown, "hw_thermal_slowdown": nvml.ClocksThrottleReasonHwThermalSlowdown,
	"hw_power_brake_slowdown": nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "sw_thermal_slowdown": nvml.ClocksEventReasonSwThermalSlowdown,
	"sw_power_cap": nvml.ClocksEventReasonSwPowerCap,
}

// recoveryActions are spec.RecoveryActions as NVML's values.
var recoveryActions = map[string]nvml.DeviceGpuRecoveryAction{
	"gpu_reset": nvml.GPU_RECOVERY_ACTION_GPU_RESET, "drain_and_reset": nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET,
}

// state answers GPU i's clock-event reasons (idle when not busy, and
// f.Throttle's in every reading), its firmware versions, its PCIe
// replay counter (rising by f.PCIeReplays[i] each reading) and the
// fields of nvmlDeviceGetFieldValues it knows: the GPU recovery action
// (none unless f.RecoveryAction names one). The recovery action is a
// field of drivers 570 and newer that the simulated 535 answers all the
// same, so that a healthy simulated host holds that check's evidence.
func state(d *server.Device, i int, f Faults) {
	var reasons uint64
	if f.UtilizationOf(i) == 0 {
		reasons = nvml.ClocksEventReasonGpuIdle
	}
	for _, r := range f.Throttle[i] {
		reasons |= throttleBits[r]
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return reasons, nvml.SUCCESS }
	vbios := f.VBIOSOf()
	d.GetVbiosVersionFunc = func() (string, nvml.Return) { return vbios, nvml.SUCCESS }
	d.GetInforomImageVersionFunc = func() (string, nvml.Return) { return spec.InforomImage, nvml.SUCCESS }
	var reads atomic.Uint64
	step := f.PCIeReplays[i]
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return int(reads.Add(1)-1) * int(step), nvml.SUCCESS }
	action := nvml.GPU_RECOVERY_ACTION_NONE
	if a, ok := recoveryActions[f.RecoveryAction[i]]; ok {
		action = a
	}
	fabric(d, f.FabricState(i))
	d.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
		for k := range values {
			v := &values[k]
			if v.FieldId != nvml.FI_DEV_GET_GPU_RECOVERY_ACTION {
				v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			v.NvmlReturn, v.ValueType = uint32(nvml.SUCCESS), uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			binary.LittleEndian.PutUint32(v.Value[:4], uint32(action))
		}
		return nvml.SUCCESS
	}
}

// fabric answers nvmlDeviceGetGpuFabricInfo with state ("":
// NOT_SUPPORTED, as the recorded A100s answer; failed: completed with an
// error status).
func fabric(d *server.Device, state string) {
	info, ret := nvml.GpuFabricInfo{CliqueId: 1}, nvml.SUCCESS
	switch state {
	case "":
		ret = nvml.ERROR_NOT_SUPPORTED
	case "not_started":
		info.State = nvml.GPU_FABRIC_STATE_NOT_STARTED
	case "in_progress":
		info.State = nvml.GPU_FABRIC_STATE_IN_PROGRESS
	case "failed":
		info.State, info.Status = nvml.GPU_FABRIC_STATE_COMPLETED, uint32(nvml.ERROR_UNKNOWN)
	default:
		info.State = nvml.GPU_FABRIC_STATE_COMPLETED
	}
	d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) { return info, ret }
}

// hang makes call never return on d (a GPU whose driver stopped
// answering): the probe must give up on it, name it and go on.
func hang(d *server.Device, call string) {
	block := func() { select {} }
	switch call {
	case "nvmlDeviceGetPowerUsage":
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { block(); return 0, nvml.ERROR_UNKNOWN }
	case "nvmlDeviceGetTemperature":
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { block(); return 0, nvml.ERROR_UNKNOWN }
	case "nvmlDeviceGetTotalEccErrors":
		d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			block()
			return 0, nvml.ERROR_UNKNOWN
		}
	}
}
